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

/** A filter's players: these keys, or every player with a history but these. */
type Candidates = { keys: string[] } | { allBut: ReadonlySet<string> };

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
  constructor(private readonly options: PlayerActivityOptions) {}

  async of(projectId: string, filters: readonly CohortFilter[]): Promise<CohortActivity> {
    const { asOfNow, playerRollups } = this.options;
    const { bases, changed } = await asOfNow.read(projectId, filters, (filter, excluded) =>
      this.candidates(projectId, filter, excluded),
    );
    const everyone = bases.some((base) => "allBut" in base);
    const keys = everyone ? null : bases.flatMap((base) => ("keys" in base ? [base.keys] : []));
    const { numbers, players, ordinals } = await playerRollups.slotted(projectId, keys);
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
    bases.forEach((base, i) => {
      if ("keys" in base) {
        const { keys } = base;
        for (let k = 0; k < keys.length; k++) {
          const history = players.get(keys[k]);
          if (history) mark(history, i);
        }
      } else for (const [key, history] of players) if (!base.allBut.has(key)) mark(history, i);
      changed.forEach((player, j) => matchesNow(filters[i], player.now) && mark(changedSlots[j], i));
    });
    return {
      pairs: numbers.pairs,
      slotDays: numbers.dayNumbers,
      cohorts: filters.length,
      players: found,
      masks: masks.subarray(0, found.length * words),
      words,
    };
  }

  /** A filter that names tags or traits is its members; otherwise every player but those carrying a `tags_none`. */
  private async candidates(
    projectId: string,
    filter: CohortFilter,
    excluded: ReadonlySet<string>,
  ): Promise<Candidates> {
    const { directory } = this.options;
    if (filter.tags.length > 0 || filter.traits.length > 0) {
      return { keys: (await directory.members(projectId, filter)).filter((key) => !excluded.has(key)) };
    }
    const carriers =
      filter.tagsNone.length === 0
        ? []
        : await directory.members(projectId, { tags: filter.tagsNone, tagsMatch: "any", traits: [], tagsNone: [] });
    return { allBut: new Set([...excluded, ...carriers]) };
  }
}
