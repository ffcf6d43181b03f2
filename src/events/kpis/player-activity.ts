import { matchesNow, mergedDays, type AsOfNow } from "../as-of-now.js";
import { slotsOf, type HistorySlots } from "../history-slots.js";
import type { PlayerDirectory } from "../player-directory.js";
import type { PlayerRollupStore } from "../player-rollup-store.js";
import type { CohortFilter } from "../query.js";

/** Each filter's players as of now, their histories as slots of one numbering of (day, name field) pairs. */
export interface CohortActivity {
  pairs: readonly { day: string; field: string }[];
  /** Per filter, in order: the history of each of its players, a folded device's days in its player's. */
  cohorts: HistorySlots[][];
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
    const keys = everyone ? null : [...new Set(bases.flatMap((base) => ("keys" in base ? base.keys : [])))];
    const { numbers, players } = await playerRollups.slotted(projectId, keys);
    const changedSlots = changed.map((player) => slotsOf(mergedDays(player), numbers));
    const cohorts = bases.map((base, i) => {
      const found: HistorySlots[] = [];
      if ("keys" in base) {
        for (const key of base.keys) {
          const history = players.get(key);
          if (history) found.push(history);
        }
      } else for (const [key, history] of players) if (!base.allBut.has(key)) found.push(history);
      changed.forEach((player, j) => matchesNow(filters[i], player.now) && found.push(changedSlots[j]));
      return found;
    });
    return { pairs: numbers.pairs, cohorts };
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
