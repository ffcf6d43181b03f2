import { Bitmap } from "../../sets/bitmap.js";
import { bucketsOf, type Interval } from "../kpis/periods.js";
import { nameField, nameOfField } from "../rollup-keys.js";
import { countIn, totalIn, type Cohort } from "./cohort-counts.js";
import type { DayActivity, DaySetReader } from "./day-sets.js";
import { fromMillionths } from "./sums.js";

export interface TrendPoint {
  date: string;
  events: number;
  players: number;
  /** The total of the read's summed property, when the series' name has it summed. */
  sum?: number;
}

export interface TrendSeries {
  name: string;
  /** The tag of the series when split by tag. */
  tag?: string;
  /** The variant of the series when split by variant. */
  variant?: string;
  points: TrendPoint[];
}

/** A bucket's counts of one name: events, distinct players, and millionths per summed property id. */
interface Slot {
  e: number;
  p: number;
  s?: Record<string, number>;
}

/** Per bucket date, per name field: its slot. */
export type Counts = Record<string, Record<string, Slot>>;

export interface TrendsQuery {
  /** The range's days within the retention window. */
  days: readonly string[];
  interval: Interval;
  /** The names shown (every name with activity when absent). */
  names?: readonly string[];
  cohorts: readonly Cohort[];
  /** The summed properties' ids whose totals the chart shows. */
  sumIds: ReadonlySet<string>;
}

/**
 * Each cohort's counts per bucket and name, by set arithmetic over the days' sets: a bucket's events and sums are
 * its days' (each a count of the cohort in each slice), its players the cohort's count in the union of its days'.
 */
export async function trendCounts(reader: DaySetReader, projectId: string, query: TrendsQuery): Promise<Counts[]> {
  const sets = await reader.read(projectId, query.days, query.names);
  const { dateOf } = bucketsOf(query.days, query.interval);
  // Per bucket and name: its days' activity.
  const buckets = new Map<string, Map<string, DayActivity[]>>();
  for (const [day, byName] of sets) {
    const date = dateOf.get(day)!;
    const bucket = buckets.get(date) ?? buckets.set(date, new Map()).get(date)!;
    for (const [name, activity] of byName) bucket.set(name, [...(bucket.get(name) ?? []), activity]);
  }
  const unions = new Map<DayActivity[], Bitmap>();
  const playersOf = (days: DayActivity[]) =>
    days.length === 1
      ? days[0].players
      : (unions.get(days) ?? unions.set(days, Bitmap.orMany(days.map((d) => d.players))).get(days)!);
  return query.cohorts.map((cohort) => {
    const counts: Counts = {};
    for (const [date, byName] of buckets) {
      for (const [name, days] of byName) {
        const p = countIn(playersOf(days), cohort);
        if (p === 0) continue;
        const slot: Slot = { e: 0, p };
        for (const day of days) {
          slot.e += countIn(day.players, cohort) + totalIn(day.counts, cohort);
          for (const [id, { pos, neg }] of day.sums) {
            if (!query.sumIds.has(id)) continue;
            (slot.s ??= {})[id] = (slot.s[id] ?? 0) + totalIn(pos, cohort) - totalIn(neg, cohort);
          }
        }
        (counts[date] ??= {})[nameField(name)] = slot;
      }
    }
    return counts;
  });
}

/**
 * One series per name: the given names, else every name with events in the range; zero days included. A name in
 * `sumIds` (name to summed property id) has the property's total on each point.
 */
export function seriesOf(
  dates: readonly string[],
  counts: Counts,
  names: readonly string[] | undefined,
  sumIds: ReadonlyMap<string, string> = new Map(),
): TrendSeries[] {
  const fields = names?.length ? names.map(nameField) : namesSeen(counts);
  return fields.map((field) => {
    const sumId = sumIds.get(nameOfField(field));
    return {
      name: nameOfField(field),
      points: dates.map((date) => {
        const slot = counts[date]?.[field];
        const point: TrendPoint = { date, events: slot?.e ?? 0, players: slot?.p ?? 0 };
        if (sumId !== undefined) point.sum = fromMillionths(slot?.s?.[sumId] ?? 0);
        return point;
      }),
    };
  });
}

/** Event totals per name over the range, most events first. */
export function nameTotals(counts: Counts): { name: string; events: number }[] {
  const totals = new Map<string, number>();
  for (const names of Object.values(counts)) {
    for (const [field, slot] of Object.entries(names)) totals.set(field, (totals.get(field) ?? 0) + slot.e);
  }
  return [...totals]
    .filter(([, events]) => events > 0)
    .map(([field, events]) => ({ name: nameOfField(field), events }))
    .sort((a, b) => b.events - a.events || (a.name < b.name ? -1 : 1));
}

function namesSeen(counts: Counts): string[] {
  const fields = new Set<string>();
  for (const names of Object.values(counts)) {
    for (const [field, slot] of Object.entries(names)) if (slot.e > 0) fields.add(field);
  }
  return [...fields].sort();
}
