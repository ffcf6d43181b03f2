import { matchesNow, mergedDays, type AsOfNow } from "../reads/as-of-now.js";
import { slotsOf, type HistorySlots } from "../rollups/history-slots.js";
import type { PlayerDirectory } from "../player-directory.js";
import type { PlayerRollupStore } from "../rollups/player-rollup-store.js";
import type { CohortFilter } from "../reads/query.js";

/**
 * The players of any of the filters as of now, each once (a folded device's days in its player's), their histories
 * as slots of one numbering of (day, name field) pairs, and which filters each is in: so the arithmetic reads a
 * player once however many cohorts of a split it is in.
 */
export interface CohortActivity {
  pairs: readonly { day: string; field: string }[];
  /** Per slot, its day as a dayNumber(). */
  slotDays: readonly number[];
  /** How many filters, in order. */
  cohorts: number;
  players: HistorySlots[];
  /** Per player, `words` 32-bit words: bit i of the filters it is in. */
  masks: Uint32Array;
  words: number;
}

/** Writes the filters `player` is in to `into` (as long as the filters), in order; answers how many. */
export function cohortsOf(activity: CohortActivity, player: number, into: Int32Array): number {
  let count = 0;
  for (let word = 0; word < activity.words; word++) {
    let bits = activity.masks[player * activity.words + word];
    while (bits !== 0) {
      const low = bits & -bits;
      into[count++] = word * 32 + 31 - Math.clz32(low);
      bits ^= low;
    }
  }
  return count;
}

/** A filter's players: its members (lists of keys) but `excluded`, or every player with a history but these. */
type Candidates =
  { lists: readonly (readonly string[])[]; excluded: ReadonlySet<string> } | { allBut: ReadonlySet<string> };

export interface PlayerActivityOptions {
  asOfNow: AsOfNow;
  playerRollups: PlayerRollupStore;
  directory: PlayerDirectory;
}

/**
 * The KPIs' read model: which players of a cohort were active on which days, per name, as of now. It reads the
 * histories the worker keeps (from the owner's memory where it holds them: no command; else by the engine's way)
 * and the cohort's members as the trends' exact path does; the players changed and not yet moved by the worker
 * are counted by AsOfNow's one read of them (a made fold's device in its player, tags and traits now).
 */
export class PlayerActivity {
  /**
   * Per member list as the directory keeps it (the owner's membership buckets), its keys' history ordinals (-1:
   * none), found while the memory's histories had `ordinals` numbers: a later read of the same list, with no
   * history new to memory since, reads these instead of looking each key up.
   */
  private readonly resolved = new WeakMap<readonly string[], { ordinals: number; of: Int32Array }>();

  constructor(private readonly options: PlayerActivityOptions) {}

  async of(projectId: string, filters: readonly CohortFilter[]): Promise<CohortActivity> {
    const { asOfNow, playerRollups } = this.options;
    const { bases, changed } = await asOfNow.read(projectId, filters, (filter, excluded) =>
      this.candidates(projectId, filter, excluded),
    );
    const everyone = bases.some((base) => "allBut" in base);
    const keys = everyone ? null : bases.flatMap((base) => ("lists" in base ? withoutExcluded(base) : []));
    const { numbers, players, ordinals, byOrdinal } = await playerRollups.slotted(projectId, keys);
    const changedSlots = changed.map((player, j) => slotsOf(mergedDays(player), numbers, ordinals + j));
    const words = Math.ceil(filters.length / 32);
    const masks = new Uint32Array((players.size + changed.length) * words);
    const found: HistorySlots[] = [];
    // Each history's place in `found` by its ordinal (-1: not yet), so a player of two filters is read once.
    const placeOf = new Int32Array(ordinals + changed.length).fill(-1);
    const mark = (history: HistorySlots, filter: number) => {
      let player = placeOf[history.ordinal];
      if (player < 0) placeOf[history.ordinal] = player = found.push(history) - 1;
      masks[player * words + (filter >>> 5)] |= 1 << (filter & 31);
    };
    // By ordinal: the history itself (far in memory) is touched only when its player is first placed.
    const markOrdinal = (ordinal: number, filter: number) => {
      let player = placeOf[ordinal];
      if (player < 0) {
        const history = byOrdinal![ordinal];
        if (!history) return;
        placeOf[ordinal] = player = found.push(history) - 1;
      }
      masks[player * words + (filter >>> 5)] |= 1 << (filter & 31);
    };
    let left: Uint8Array | undefined;
    bases.forEach((base, i) => {
      if ("lists" in base) {
        // The same players are excluded from every filter.
        left ??= leftOut(base.excluded, players, ordinals);
        for (const list of base.lists) {
          if (!byOrdinal) {
            for (const key of list) if (!base.excluded.has(key)) markKey(players.get(key), i);
            continue;
          }
          const of = this.ordinalsOf(list, players, ordinals);
          for (let k = 0; k < of.length; k++) if (of[k] >= 0 && left[of[k]] === 0) markOrdinal(of[k], i);
        }
      } else for (const [key, history] of players) if (!base.allBut.has(key)) mark(history, i);
      changed.forEach((player, j) => !player.erased && matchesNow(filters[i], player.now) && mark(changedSlots[j], i));
    });
    function markKey(history: HistorySlots | undefined, filter: number) {
      if (history) mark(history, filter);
    }
    return {
      pairs: numbers.pairs,
      slotDays: numbers.dayNumbers,
      cohorts: filters.length,
      players: found,
      masks: masks.subarray(0, found.length * words),
      words,
    };
  }

  /** The history ordinals of a member list's keys (-1: none), found once while no history is new to memory. */
  private ordinalsOf(list: readonly string[], players: ReadonlyMap<string, HistorySlots>, ordinals: number) {
    const known = this.resolved.get(list);
    if (known?.ordinals === ordinals) return known.of;
    const of = Int32Array.from(list, (key) => players.get(key)?.ordinal ?? -1);
    this.resolved.set(list, { ordinals, of });
    return of;
  }

  /** A filter naming tags or traits is its members; otherwise every player but those carrying a `tags_none`. */
  private async candidates(
    projectId: string,
    filter: CohortFilter,
    excluded: ReadonlySet<string>,
  ): Promise<Candidates> {
    const { directory } = this.options;
    if (filter.tags.length > 0 || filter.traits.length > 0) {
      return { lists: await directory.members(projectId, filter), excluded };
    }
    const carriers =
      filter.tagsNone.length === 0
        ? []
        : (
            await directory.members(projectId, { tags: filter.tagsNone, tagsMatch: "any", traits: [], tagsNone: [] })
          ).flat();
    return { allBut: new Set([...excluded, ...carriers]) };
  }
}

/** A filter's members but the excluded ones, as lists. */
function withoutExcluded({ lists, excluded }: Extract<Candidates, { lists: unknown }>) {
  return excluded.size === 0 ? lists : lists.map((keys) => keys.filter((key) => !excluded.has(key)));
}

/** Per ordinal, 1 for the histories of `excluded` keys (the changed players, counted as of now instead). */
function leftOut(excluded: ReadonlySet<string>, players: ReadonlyMap<string, HistorySlots>, ordinals: number) {
  const left = new Uint8Array(ordinals);
  for (const key of excluded) {
    const history = players.get(key);
    if (history && history.ordinal < ordinals) left[history.ordinal] = 1;
  }
  return left;
}
