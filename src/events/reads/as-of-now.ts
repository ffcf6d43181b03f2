import { setTimeout as delay } from "node:timers/promises";
import { UnavailableError } from "../../errors.js";
import { traitIndexEntry } from "../../players/rules/normalise.js";
import type { CohortDays } from "../rollups/cohort-rollup-store.js";
import { EVERYONE } from "../rollups/cohort-rollup-store.js";
import type { ChangedPlayer, ChangedPlayers } from "../../players/changed-players.js";
import type { PlayerCohorts, PlayerDirectory } from "../player-directory.js";
import type { PlayerRollupStore } from "../rollups/player-rollup-store.js";
import type { DayCounts, PlayerRollup } from "../rollups/player-rollup.js";
import type { CohortFilter } from "./query.js";
import type { QueueStateStore } from "../queue/queue.js";
import { addSum, addToSlot, type SumDays } from "./sums.js";

/** Reads that saw the worker move a changed player's history mid-read are made again, at most this often. */
const CONSISTENT_READ_ATTEMPTS = 8;
/** The wait before a read made again: 1 ms doubling (255 ms in all), so a segment being applied can finish first. */
const retryWaitMs = (attempt: number) => 2 ** attempt;

/**
 * What a read of the rollups counted for the players it was told to leave
 * out: `cohort` when it read that materialised cohort (each player counted
 * where its stored history says it is), null when it left them out (the
 * exact path over members' histories).
 */
export interface BaseCounts {
  counts: CohortDays;
  cohort: string | null;
}

export interface AsOfNowOptions {
  changes: ChangedPlayers;
  queue: QueueStateStore;
  playerRollups: PlayerRollupStore;
  directory: PlayerDirectory;
}

/** Changed players by the player their history belongs to now (a fold's target), with the keys it gathers. */
type Groups = Map<string, string[]>;

/**
 * Read your writes for every chart: the rollups lag the player changes the
 * worker has not moved yet (the changed players, one entry each: changed-players.ts),
 * so each read counts those players itself, from their histories and their
 * cohorts as of now, in place of what the rollups say of them. The rollups
 * and the histories are read at one queue state: the cursor is read before
 * the rollups, the histories after, and a history that absorbed a later
 * segment meanwhile makes the read start again. A segment the cursor listed
 * as applied ahead is complete, and so is every earlier one of its project.
 */
export class AsOfNow {
  constructor(private readonly options: AsOfNowOptions) {}

  /** `read` each filter (leaving out `excluded` players where it reads members), corrected as of now. */
  async counts(
    projectId: string,
    filters: readonly CohortFilter[],
    read: (filter: CohortFilter, excluded: ReadonlySet<string>) => Promise<BaseCounts>,
    sumIds: ReadonlySet<string> = new Set(),
  ): Promise<CohortDays[]> {
    const { bases, changed } = await this.read(projectId, filters, read);
    return bases.map((base, i) => corrected(base, filters[i], changed, sumIds));
  }

  /**
   * `read` each filter, leaving out the changed players, and those players'
   * histories and cohorts as of now, all at one queue state: what every
   * correction (counts above, the KPIs' players) starts from.
   */
  async read<Base>(
    projectId: string,
    filters: readonly CohortFilter[],
    read: (filter: CohortFilter, excluded: ReadonlySet<string>) => Promise<Base>,
  ): Promise<{ bases: Base[]; changed: PlayerAsOfNow[] }> {
    const { changes, queue, playerRollups } = this.options;
    for (let attempt = 0; attempt < CONSISTENT_READ_ATTEMPTS; attempt++) {
      const waiting = await changes.waiting(projectId);
      if (waiting.length === 0)
        return { bases: await Promise.all(filters.map((f) => read(f, new Set()))), changed: [] };
      const { applied, ahead } = await queue.read();
      const groups = await this.groupsOf(projectId, waiting);
      // An erasure whose segment is not applied yet: the stored history is the erased player's, no one's now.
      const erased = new Set(
        waiting.flatMap(({ identityKey, erasedAt: seq }) =>
          seq !== null && seq > applied && !ahead.has(seq) ? [identityKey] : [],
        ),
      );
      const keys = new Set([...groups.values()].flat());
      const bases = await Promise.all(filters.map((filter) => read(filter, keys)));
      const histories = await playerRollups.read(projectId, [...keys]);
      if ([...histories.values()].some((history) => history.hw > applied && !ahead.has(history.hw))) {
        await delay(retryWaitMs(attempt));
        continue;
      }
      const now = await this.options.directory.cohortsOf(projectId, [...groups.keys()]);
      const changed = [...groups].map(([target, members]) => ({
        target,
        histories: members.flatMap((key) => histories.get(key) ?? []),
        now: now.get(target),
        erased: erased.has(target),
      }));
      return { bases, changed };
    }
    throw new UnavailableError("event histories kept moving during the read; try again");
  }

  /** The changed players grouped by where their history belongs now; a recorded fold counts once it is made. */
  private async groupsOf(projectId: string, waiting: readonly ChangedPlayer[]): Promise<Groups> {
    const sources = waiting.flatMap((player) => (player.into === null ? [] : [player.identityKey]));
    const targets = sources.length > 0 ? await this.options.directory.foldTargets(projectId, sources) : new Map();
    const keys = new Set(waiting.map((player) => player.into ?? player.identityKey));
    for (const source of targets.keys()) keys.add(source);
    const groups: Groups = new Map();
    for (const key of keys) {
      let target = key;
      for (let hop = 0; hop <= targets.size && targets.has(target); hop++) target = targets.get(target)!;
      groups.set(target, [...(groups.get(target) ?? []), key]);
    }
    return groups;
  }
}

/** The stored histories that are one changed player's now (a made fold's device with its player), with its cohorts now. */
export interface PlayerAsOfNow {
  target: string;
  histories: PlayerRollup[];
  now: PlayerCohorts | undefined;
  /** Erased: counted in no cohort now, whatever its history. */
  erased: boolean;
}

/** A changed player's history as of now: the days of every history it gathers. */
export function mergedDays(player: PlayerAsOfNow): DayCounts {
  const merged: DayCounts = {};
  for (const history of player.histories) {
    for (const [day, names] of Object.entries(history.days)) {
      for (const [field, events] of Object.entries(names)) {
        if (events > 0) (merged[day] ??= {})[field] = (merged[day]?.[field] ?? 0) + events;
      }
    }
  }
  return merged;
}

/** `base` with each changed player's stored contribution taken out and its contribution as of now put in. */
function corrected(
  base: BaseCounts,
  filter: CohortFilter,
  changed: readonly PlayerAsOfNow[],
  sumIds: ReadonlySet<string>,
): CohortDays {
  const counts = structuredClone(base.counts);
  for (const player of changed) {
    const mergedSums: SumDays = {};
    for (const history of player.histories) {
      const counted = base.cohort !== null && (base.cohort === EVERYONE || history.cohorts.includes(base.cohort));
      if (counted) {
        for (const [day, names] of Object.entries(history.days)) {
          for (const [field, events] of Object.entries(names)) if (events > 0) add(counts, day, field, -events, -1);
        }
      }
      for (const [day, fields] of Object.entries(sumIds.size > 0 ? history.sums : {})) {
        for (const [field, sums] of Object.entries(fields)) {
          for (const [id, by] of Object.entries(sums)) addSum(mergedSums, day, field, id, by);
          if (counted) addToSlot(slotOf(counts, day, field), sums, sumIds, -1);
        }
      }
    }
    if (player.erased || !matchesNow(filter, player.now)) continue;
    for (const [day, names] of Object.entries(mergedDays(player))) {
      for (const [field, events] of Object.entries(names)) add(counts, day, field, events, 1);
    }
    for (const [day, fields] of Object.entries(mergedSums)) {
      for (const [field, sums] of Object.entries(fields)) addToSlot(slotOf(counts, day, field), sums, sumIds);
    }
  }
  return counts;
}

const slotOf = (counts: CohortDays, day: string, field: string) => ((counts[day] ??= {})[field] ??= { e: 0, p: 0 });

function add(counts: CohortDays, day: string, field: string, events: number, players: number): void {
  const slot = slotOf(counts, day, field);
  slot.e += events;
  slot.p += players;
}

/** Whether a player with these tags and traits now is in the filter's cohort (as search and members decide it). */
export function matchesNow(filter: CohortFilter, player: PlayerCohorts | undefined): boolean {
  const tags = new Set(player?.tags ?? []);
  const traits = new Set([...(player?.traits ?? new Map())].map(([key, value]) => traitIndexEntry(key, value)));
  const tagged =
    filter.tags.length === 0 ||
    (filter.tagsMatch === "all" ? filter.tags.every((t) => tags.has(t)) : filter.tags.some((t) => tags.has(t)));
  return tagged && filter.tagsNone.every((t) => !tags.has(t)) && filter.traits.every((entry) => traits.has(entry));
}
