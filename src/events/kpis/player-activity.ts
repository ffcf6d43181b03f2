import { matchesNow, mergedDays, type AsOfNow, type PlayerAsOfNow } from "../reads/as-of-now.js";
import { slotsOf, type HistorySlots, type SlottedHistories } from "../rollups/player-rollup.js";
import type { PlayerDirectory } from "../player-directory.js";
import type { PlayerRollupStore } from "../rollups/player-rollup-store.js";
import type { CohortFilter } from "../reads/query.js";
import { ActivityColumns, type ColumnArrays } from "./activity-columns.js";
import { groupsOf } from "./cohort-groups.js";

/**
 * The players of any of the filters as of now, each once (a folded device's days in its player's), their histories
 * packed in `columns` as slots of one numbering of (day, name field) pairs, and grouped by the set of filters they
 * are in: so the arithmetic reads a player once, adds it to its group, and adds each group to its cohorts.
 */
export interface CohortActivity {
  pairs: readonly { day: string; field: string }[];
  /** Per slot, its day as a dayNumber(). */
  slotDays: readonly number[];
  /** How many filters, in order. */
  cohorts: number;
  columns: ColumnArrays;
  /** How many players. */
  rows: number;
  /** Per player (row r at 4r): where its runs of days (runAt, runEnd) and its slots (slotAt, slotEnd) are in `columns`. */
  ranges: Int32Array;
  /** Per player, its group. */
  groupOf: Int32Array;
  /** Per group, the filters its players are in (in order). */
  groups: Int32Array[];
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
  /** Per project (its memory's histories by ordinal), their columns. */
  private readonly columns = new WeakMap<readonly (HistorySlots | undefined)[], ActivityColumns>();
  /** Per project, the last model read of member lists alone, with what it stands on. */
  private readonly last = new WeakMap<
    readonly (HistorySlots | undefined)[],
    { lists: MemberLists; ordinals: number; version: number; model: CohortActivity }
  >();

  constructor(private readonly options: PlayerActivityOptions) {}

  async of(projectId: string, filters: readonly CohortFilter[]): Promise<CohortActivity> {
    const { asOfNow, playerRollups } = this.options;
    const { bases, changed } = await asOfNow.read(projectId, filters, (filter, excluded) =>
      this.candidates(projectId, filter, excluded),
    );
    const everyone = bases.some((base) => "allBut" in base);
    const keys = everyone ? null : bases.flatMap((base) => ("lists" in base ? withoutExcluded(base) : []));
    const slotted = await playerRollups.slotted(projectId, keys);
    const { ordinals, byOrdinal } = slotted;
    const columns = this.columnsOf(byOrdinal, slotted.players);
    // Every filter its member lists and no player changed: the last read's model while nothing it placed moved.
    const lists = changed.length > 0 ? null : listsOf(bases);
    const last = byOrdinal && lists && this.last.get(byOrdinal);
    if (last && last.ordinals === ordinals && last.version === columns.version && sameLists(last.lists, lists!)) {
      return last.model;
    }
    const model = this.placed(filters, bases, changed, slotted, columns);
    if (byOrdinal && lists) this.last.set(byOrdinal, { lists, ordinals, version: columns.version, model });
    return model;
  }

  /** Each player of any filter placed once, with its range in the columns and its group of cohorts. */
  private placed(
    filters: readonly CohortFilter[],
    bases: readonly Candidates[],
    changed: readonly PlayerAsOfNow[],
    { numbers, players, ordinals, byOrdinal }: SlottedHistories,
    columns: ActivityColumns,
  ): CohortActivity {
    const words = Math.ceil(filters.length / 32);
    const masks = new Uint32Array((players.size + changed.length) * words);
    // Per player placed, its ordinal (a changed player's: `ordinals` + its index in `changed`).
    const placed = new Int32Array(players.size + changed.length);
    let rows = 0;
    // Each ordinal's row (-1: not yet), so a player of two filters is read once.
    const rowOf = new Int32Array(ordinals + changed.length).fill(-1);
    const mark = (ordinal: number, filter: number) => {
      let row = rowOf[ordinal];
      if (row < 0) {
        if (ordinal < ordinals && !columns.has(ordinal)) return;
        placed[(rowOf[ordinal] = row = rows++)] = ordinal;
      }
      masks[row * words + (filter >>> 5)] |= 1 << (filter & 31);
    };
    let left: Uint8Array | undefined;
    bases.forEach((base, i) => {
      if ("lists" in base) {
        // The same players are excluded from every filter.
        left ??= leftOut(base.excluded, players, ordinals);
        for (const list of base.lists) {
          const of = this.ordinalsOf(list, players, ordinals, byOrdinal !== undefined);
          for (let k = 0; k < of.length; k++) if (of[k] >= 0 && left[of[k]] === 0) mark(of[k], i);
        }
      } else for (const [key, history] of players) if (!base.allBut.has(key)) mark(history.ordinal, i);
      changed.forEach((player, j) => !player.erased && matchesNow(filters[i], player.now) && mark(ordinals + j, i));
    });
    // The changed players' histories as of now, packed for this read only.
    const loose = changed.map((player) => columns.appendLoose(slotsOf(mergedDays(player), numbers, -1)));
    const ranges = new Int32Array(4 * rows);
    for (let row = 0; row < rows; row++) {
      const ordinal = placed[row];
      if (ordinal < ordinals) columns.copyRange(ordinal, ranges, 4 * row);
      else {
        const { runAt, runEnd, slotAt, slotEnd } = loose[ordinal - ordinals];
        ranges.set([runAt, runEnd, slotAt, slotEnd], 4 * row);
      }
    }
    return {
      pairs: numbers.pairs,
      slotDays: numbers.dayNumbers,
      cohorts: filters.length,
      columns: columns.current,
      rows,
      ranges,
      ...groupsOf(masks, words, rows),
    };
  }

  /**
   * The histories packed: the memory's (by ordinal) in columns kept from read to read and brought up to date, or
   * those read (from the database) in columns of this read.
   */
  private columnsOf(
    byOrdinal: readonly (HistorySlots | undefined)[] | undefined,
    players: ReadonlyMap<string, HistorySlots>,
  ): ActivityColumns {
    let columns = byOrdinal && this.columns.get(byOrdinal);
    if (!columns) {
      columns = new ActivityColumns();
      if (byOrdinal) this.columns.set(byOrdinal, columns);
    }
    if (byOrdinal) columns.sync(byOrdinal);
    else {
      const read: HistorySlots[] = [];
      for (const history of players.values()) read[history.ordinal] = history;
      columns.sync(read);
    }
    return columns;
  }

  /** The history ordinals of a member list's keys (-1: none), found once while no history is new to memory. */
  private ordinalsOf(
    list: readonly string[],
    players: ReadonlyMap<string, HistorySlots>,
    ordinals: number,
    remembered: boolean,
  ) {
    const known = remembered ? this.resolved.get(list) : undefined;
    if (known?.ordinals === ordinals) return known.of;
    const of = Int32Array.from(list, (key) => players.get(key)?.ordinal ?? -1);
    if (remembered) this.resolved.set(list, { ordinals, of });
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

/** Per filter, its member lists. */
type MemberLists = readonly (readonly (readonly string[])[])[];

/** The filters' member lists, when each filter is its members with none excluded; else null. */
function listsOf(bases: readonly Candidates[]): MemberLists | null {
  const lists = [];
  for (const base of bases) {
    if (!("lists" in base) || base.excluded.size > 0) return null;
    lists.push(base.lists);
  }
  return lists;
}

/** The same lists (the same arrays: a membership bucket is a new one when its members change), in order. */
function sameLists(a: MemberLists, b: MemberLists): boolean {
  return (
    a.length === b.length &&
    a.every((lists, i) => lists.length === b[i].length && lists.every((list, j) => list === b[i][j]))
  );
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
