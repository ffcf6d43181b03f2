import {
  EVERYONE,
  tagCohort,
  traitCohort,
  type CohortDays,
  type CohortRollupStore,
} from "../rollups/cohort-rollup-store.js";
import { monthOf, nameField, nameOfField } from "../rollup-keys.js";
import type { PlayerDirectory } from "../player-directory.js";
import type { PlayerRollupStore } from "../rollups/player-rollup-store.js";
import { isEveryone, type CohortFilter, type EventQuery } from "./query.js";
import { traitKeyOf, type TraitCohorts } from "../apply/trait-cohorts.js";
import type { AsOfNow, BaseCounts } from "./as-of-now.js";
import type { EventNameStore, ProjectNames } from "../rollups/event-name-store.js";
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
  points: TrendPoint[];
}

/** Per day, per name field: events and distinct players, of one cohort over a range. */
type Counts = CohortDays;

/** What a chart reads: its days and their months, the project's names and those it shows (all when absent). */
interface StoredRange {
  days: readonly string[];
  months: readonly string[];
  names: ProjectNames;
  wanted?: readonly string[];
  /** The summed properties' ids whose totals the chart shows. */
  sumIds: ReadonlySet<string>;
}

export interface ReadOptions {
  cohortRollups: CohortRollupStore;
  playerRollups: PlayerRollupStore;
  directory: PlayerDirectory;
  traitCohorts: TraitCohorts;
  asOfNow: AsOfNow;
  /** The project's names, whose places say which cohort documents hold them. */
  names: EventNameStore;
}

/**
 * Answers a cohort's daily counts over a range, as of now (as-of-now.ts
 * corrects every path for the player changes the worker has not moved yet).
 * Everyone, a single tag and a single value of a materialised trait key read
 * the cohort's rollups (one document per month); any other filter is answered
 * exactly by the slower path: the cohort's members from the players'
 * membership, then each member's history by `_id`.
 */
export class CohortReader {
  constructor(private readonly options: ReadOptions) {}

  /**
   * Days before `firstDay` (out of the retention window) count nothing.
   * `wanted`: the names the caller will show (all when absent); others may be counted too.
   * `sumIds`: the summed properties whose totals it shows (sums.ts).
   */
  async counts(
    projectId: string,
    query: EventQuery,
    firstDay: string,
    wanted?: readonly string[],
    sumIds: ReadonlySet<string> = new Set(),
  ): Promise<Counts> {
    return (await this.countsOfEach(projectId, query, firstDay, [query.cohort], wanted, sumIds))[0];
  }

  /** The counts of each cohort, all read at one queue state (a split chart). */
  async countsOfEach(
    projectId: string,
    query: EventQuery,
    firstDay: string,
    cohorts: readonly CohortFilter[],
    wanted?: readonly string[],
    sumIds: ReadonlySet<string> = new Set(),
  ): Promise<Counts[]> {
    const months = [...new Set(query.days.map(monthOf))];
    const names = await this.options.names.current(projectId);
    const range = { days: query.days, months, names, wanted, sumIds };
    const parts = cohorts.map(countedAs);
    const all = await this.options.asOfNow.counts(
      projectId,
      parts.flatMap(({ read, less }) => (less ? [read, less] : [read])),
      (cohort, excluded) => this.stored(projectId, range, cohort, excluded),
      sumIds,
    );
    return parts.map(({ less }) => {
      const counts = all.shift()!;
      if (less) subtract(counts, all.shift()!);
      const inRange: Counts = {};
      for (const day of query.days) if (day >= firstDay && counts[day]) inRange[day] = counts[day];
      return inRange;
    });
  }

  /** What the rollups hold for `cohort`, leaving `excluded` players out where it reads members. */
  private async stored(
    projectId: string,
    { days, months, names, wanted, sumIds }: StoredRange,
    cohort: CohortFilter,
    excluded: ReadonlySet<string>,
  ): Promise<BaseCounts> {
    const materialised = await this.materialisedCohort(projectId, cohort);
    if (materialised !== null) {
      const counts = await this.options.cohortRollups.read(projectId, materialised, months, names, wanted, sumIds);
      return { counts, cohort: materialised };
    }
    return { counts: await this.exact(projectId, days, cohort, excluded, sumIds), cohort: null };
  }

  /** The materialised cohort that answers `cohort` alone, or null when only the exact path can. */
  private async materialisedCohort(projectId: string, cohort: CohortFilter): Promise<string | null> {
    if (isEveryone(cohort)) return EVERYONE;
    if (cohort.tagsNone.length > 0) return null;
    const [tag, trait] = [cohort.tags[0], cohort.traits[0]];
    if (cohort.traits.length === 0 && cohort.tags.length === 1) return tagCohort(tag);
    if (cohort.tags.length > 0 || cohort.traits.length > 1) return null;
    return (await this.options.traitCohorts.isReady(projectId, traitKeyOf(trait))) ? traitCohort(trait) : null;
  }

  private async exact(
    projectId: string,
    days: readonly string[],
    cohort: CohortFilter,
    excluded: ReadonlySet<string>,
    sumIds: ReadonlySet<string>,
  ): Promise<Counts> {
    const lists = await this.options.directory.members(projectId, cohort);
    const members = lists.flatMap((keys) => keys.filter((key) => !excluded.has(key)));
    const counts: Counts = {};
    await this.options.playerRollups.sum(projectId, members, new Set(days), counts, sumIds);
    return counts;
  }
}

/**
 * How a cohort is counted: read itself, or, with tags_none alone, everyone's counts less those of the players
 * carrying any of those tags; so players with events and no profile (who carry no tag) count, and the players of
 * a day are exact, the carriers being among everyone.
 */
function countedAs(cohort: CohortFilter): { read: CohortFilter; less?: CohortFilter } {
  if (cohort.tagsNone.length === 0 || cohort.tags.length > 0 || cohort.traits.length > 0) return { read: cohort };
  return {
    read: { tags: [], tagsMatch: "any", traits: [], tagsNone: [] },
    less: { tags: cohort.tagsNone, tagsMatch: "any", traits: [], tagsNone: [] },
  };
}

function subtract(counts: Counts, less: Counts): void {
  for (const [day, names] of Object.entries(less)) {
    for (const [field, slot] of Object.entries(names)) {
      const from = counts[day]?.[field];
      if (!from) continue;
      [from.e, from.p] = [from.e - slot.e, from.p - slot.p];
      for (const [id, total] of Object.entries(slot.s ?? {})) if (from.s) from.s[id] = (from.s[id] ?? 0) - total;
    }
  }
}

/**
 * One series per name: the given names, else every name with events in the range; zero days included. A name in
 * `sumIds` (name to summed property id) has the property's total on each point.
 */
export function seriesOf(
  days: readonly string[],
  counts: Counts,
  names: readonly string[] | undefined,
  sumIds: ReadonlyMap<string, string> = new Map(),
): TrendSeries[] {
  const fields = names?.length ? names.map(nameField) : namesSeen(counts);
  return fields.map((field) => {
    const sumId = sumIds.get(nameOfField(field));
    return {
      name: nameOfField(field),
      points: days.map((date) => {
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
