import { InvalidArgumentError } from "../../errors.js";
import { Bitmap } from "../../sets/bitmap.js";
import type { Clock } from "../../clock.js";
import type { DaySetReader, DaySets } from "../reads/day-sets.js";
import { dayOf } from "../rollup-keys.js";
import type { SummedPropertyStore } from "../rollups/summed-property-store.js";
import { SUM_SCALE } from "../reads/sums.js";
import { dayNumber, dayOfNumber } from "./periods.js";

/**
 * What is counted of each exposed player from their exposure day d: `return`, an event of any name on day d + days;
 * `event`, an event `name` on days d to d + days - 1; `sum`, the total of `name`'s summed `property` on those days.
 */
export interface ExposureMetric {
  kind: "return" | "event" | "sum";
  days: number;
  name?: string;
  property?: string;
}

/** A group's players and their values: a player's is 0 or 1 for a share, a total for a sum. */
export interface MetricTotals {
  /** Players exposed. */
  exposed: number;
  /** Those whose days counted are all before today (UTC): the players the totals are of. */
  measured: number;
  /** Σ of their values, and Σ of their squares. */
  total: number;
  squares: number;
}

/** Per group (a variant), per exposure day ("YYYY-MM-DD"): the players exposed that day. */
export type ExposedByDay = ReadonlyMap<string, ReadonlyMap<string, Bitmap>>;

const invalid = (message: string) => new InvalidArgumentError(message);

/**
 * An experiment's metric as set arithmetic: each day's exposed players intersected with the activity of the days
 * after it, a per-player value decoded only for a sum (from the bit-sliced sums of the exposed players). Days
 * before the retention window count nothing.
 */
export class ExposureMetrics {
  constructor(private readonly deps: { reader: DaySetReader; summed: SummedPropertyStore; clock: Clock }) {}

  async totals(projectId: string, exposed: ExposedByDay, metric: ExposureMetric): Promise<Map<string, MetricTotals>> {
    const { reader, clock } = this.deps;
    if (metric.kind !== "return" && !metric.name) throw invalid(`metric.name: the event name ${metric.kind} counts`);
    const sumId = metric.kind === "sum" ? await this.sumIdOf(projectId, metric) : undefined;
    const offsets = metric.kind === "return" ? [metric.days] : Array.from({ length: metric.days }, (_, k) => k);
    const today = dayNumber(dayOf(clock.now()));
    const exposureDays = [...new Set([...exposed.values()].flatMap((byDay) => [...byDay.keys()]))].map(dayNumber);
    const measuredDays = exposureDays.filter((day) => day + offsets.at(-1)! < today);
    const readDays = [...new Set(measuredDays.flatMap((day) => offsets.map((k) => day + k)))].sort((a, b) => a - b);
    const names = metric.kind === "return" ? undefined : [metric.name!];
    const sets = await reader.read(projectId, readDays.map(dayOfNumber), names);
    const measured = new Set(measuredDays.map(dayOfNumber));
    const totals = new Map<string, MetricTotals>();
    for (const [group, byDay] of exposed) {
      const sum: MetricTotals = { exposed: 0, measured: 0, total: 0, squares: 0 };
      for (const [day, players] of byDay) {
        sum.exposed += players.size;
        if (!measured.has(day) || players.isEmpty) continue;
        sum.measured += players.size;
        const days = offsets.map((k) => dayOfNumber(dayNumber(day) + k));
        if (sumId === undefined) {
          const hits = this.reached(projectId, sets, days, names).andCardinality(players);
          sum.total += hits;
          sum.squares += hits;
        } else {
          for (const value of valuesOf(sets, days, metric.name!, sumId, players)) {
            sum.total += value;
            sum.squares += value * value;
          }
        }
      }
      totals.set(group, sum);
    }
    return totals;
  }

  /** The players with an event (of `names`) on any of `days`. */
  private reached(projectId: string, sets: DaySets, days: readonly string[], names?: readonly string[]): Bitmap {
    const parts = days.map((day) => this.deps.reader.playersOf(projectId, day, sets, names));
    return parts.length === 1 ? parts[0] : Bitmap.orMany(parts);
  }

  /** The sum's id of the metric's name and property: a 400 naming metric.property when the project does not sum it. */
  private async sumIdOf(projectId: string, { name, property }: ExposureMetric): Promise<string> {
    if (!property) throw invalid("metric.property: the summed property a sum counts");
    const pair = (await this.deps.summed.list(projectId)).find(
      (one) => one.ready && one.name === name && one.property === property,
    );
    if (!pair) {
      throw invalid(
        `metric.property: ${JSON.stringify(property)} of ${JSON.stringify(name)} is not summed (events/properties/update turns a sum on)`,
      );
    }
    return pair.id;
  }
}

/**
 * The total of each of `players` over `days` (in the property's units), decoded from the sums' slices: only the
 * players with a bit in a slice are visited. Players without an event add their 0 (no value listed).
 */
function valuesOf(sets: DaySets, days: readonly string[], name: string, sumId: string, players: Bitmap): number[] {
  const totals = new Map<number, number>();
  for (const day of days) {
    const slices = sets.get(day)?.get(name)?.sums.get(sumId);
    if (!slices) continue;
    for (const [side, sign] of [
      [slices.pos, 1],
      [slices.neg, -1],
    ] as const) {
      side.forEach((slice, k) => {
        for (const number of Bitmap.and(slice, players)) {
          totals.set(number, (totals.get(number) ?? 0) + sign * 2 ** k);
        }
      });
    }
  }
  return [...totals.values()].map((millionths) => millionths / SUM_SCALE);
}
