import { Long } from "mongodb";
import { projectScopedId } from "../../db/ids.js";
import { WriteBehind } from "../../db/owner-memory.js";
import type { DocumentChange, RollupDoc, SequencedChange } from "../apply/absorb.js";
import { dayNumber } from "../kpis/periods.js";
import { addSum, type SumDays } from "../reads/sums.js";

/*
 * A player's history: its shape, its stored document, a segment's change applied to it (and merged with the next,
 * while it waits to be written), and its days as slots.
 */

/** Per day, events per name field (see rollup-keys.ts). */
export type DayCounts = Record<string, Record<string, number>>;

/** One player's history of events, and the cohorts it is counted in. */
export interface PlayerRollup {
  identityKey: string;
  days: DayCounts;
  /** Per day and name field, the summed properties' totals in millionths (sums.ts). */
  sums: SumDays;
  /** Cohort ids ("t/<tag>", "r/<trait>") the history is counted in now. */
  cohorts: string[];
  /** Set once a device's history moved to a player. */
  foldedInto: string | null;
  /** The last queue segment this history absorbed. */
  hw: number;
}

/** A player's history as stored in `event_player_rollups`, one document a player. */
export interface PlayerRollupDoc extends RollupDoc {
  _id: string;
  project_id: string;
  identity_key: string;
  days?: DayCounts;
  sums?: SumDays;
  cohorts?: string[];
  /** The player's trait keys as of the last segment that touched it. */
  trait_keys?: string[];
  folded_into?: string | null;
  hw: number;
}

export const playerRollupId = (projectId: string, identityKey: string): string =>
  projectScopedId(projectId, identityKey);

/** A stored history as the code reads it. */
export function toRollup(doc: PlayerRollupDoc): PlayerRollup {
  return {
    identityKey: doc.identity_key,
    days: doc.days ?? {},
    sums: doc.sums ?? {},
    cohorts: doc.cohorts ?? [],
    foldedInto: doc.folded_into ?? null,
    hw: doc.hw,
  };
}

// How a segment's planned change applies to a player's history, as the database applies it: the owner's memory keeps
// its histories up to date by the same rule, so it answers what a read of the database would.

/** A history the database has not stored yet, as a change's upsert starts it (`init`). */
export function newHistory(change: DocumentChange): PlayerRollup {
  return { identityKey: String(change.init.identity_key), days: {}, sums: {}, cohorts: [], foldedInto: null, hw: -1 };
}

/** A history with segment `seq`'s planned change applied, as the database applies its `$inc`, `$set` and `$unset`. */
export function applied(rollup: PlayerRollup, change: DocumentChange, seq: number): PlayerRollup {
  const days: PlayerRollup["days"] = Object.fromEntries(
    Object.entries(rollup.days).map(([day, names]) => [day, { ...names }]),
  );
  const sums: SumDays = structuredClone(rollup.sums);
  for (const path of change.unset ?? []) {
    const [top, day] = path.split(".");
    const of: Record<string, unknown> = top === "sums" ? sums : days;
    if (day === undefined) for (const one of Object.keys(of)) delete of[one];
    else delete of[day];
  }
  for (const [path, inc] of Object.entries(change.inc)) {
    const [top, day, field, id] = path.split(".");
    const by = typeof inc === "number" ? inc : inc.toNumber();
    if (top === "sums") addSum(sums, day, field, id, by);
    else (days[day] ??= {})[field] = (days[day]?.[field] ?? 0) + by;
  }
  const set = change.set ?? {};
  return {
    identityKey: rollup.identityKey,
    days,
    sums,
    cohorts: "cohorts" in set ? (set.cohorts as string[]) : rollup.cohorts,
    foldedInto: "folded_into" in set ? (set.folded_into as string | null) : rollup.foldedInto,
    hw: seq,
  };
}

/** DayCounts as slots read them. */
type ReadonlyDayCounts = Readonly<Record<string, Readonly<Record<string, number>>>>;

/** Per project, each (day, name field) pair seen, numbered in order of first sight, with its day as a dayNumber(). */
export class SlotNumbers {
  private readonly numbers = new Map<string, number>();
  readonly pairs: { day: string; field: string }[] = [];
  readonly dayNumbers: number[] = [];

  of(day: string, field: string): number {
    const key = `${day}\u0000${field}`;
    let number = this.numbers.get(key);
    if (number === undefined) {
      number = this.pairs.length;
      this.numbers.set(key, number);
      this.pairs.push({ day, field });
      this.dayNumbers.push(dayNumber(day));
    }
    return number;
  }
}

/**
 * A history as slot numbers of its project's (day, name field) pairs and the events of each, and the days it has
 * an event on (dayNumber()s, ascending, each once): what the KPIs read of a player without a name filter.
 */
export interface HistorySlots {
  slots: Int32Array;
  counts: Int32Array;
  days: Int32Array;
  /** Its player's number among the histories read with it (below their `ordinals`): a read's index into arrays. */
  ordinal: number;
}

/** Histories by identity key, as slots of `numbers`. */
export interface SlottedHistories {
  numbers: SlotNumbers;
  players: ReadonlyMap<string, HistorySlots>;
  /** Every history's `ordinal` is below it. */
  ordinals: number;
  /**
   * The histories by ordinal, when the numbers are the owner's memory's: one key's across reads while its history
   * is remembered, and a history new to memory takes a number above every earlier one (`ordinals` grows).
   */
  byOrdinal?: readonly (HistorySlots | undefined)[];
}

/** Histories found in memory, and the keys it does not know. */
export interface SlottedRead extends SlottedHistories {
  missing: string[];
}

/** A history's (day, name field) pairs as slots of `numbers` (which it extends), with their events and its days. */
export function slotsOf(history: ReadonlyDayCounts, numbers: SlotNumbers, ordinal: number): HistorySlots {
  const slots: number[] = [];
  const counts: number[] = [];
  const days: number[] = [];
  for (const [day, names] of Object.entries(history)) {
    const before = slots.length;
    for (const [field, events] of Object.entries(names)) {
      if (events <= 0) continue;
      slots.push(numbers.of(day, field));
      counts.push(events);
    }
    if (slots.length > before) days.push(numbers.dayNumbers[slots[before]]);
  }
  return {
    slots: Int32Array.from(slots),
    counts: Int32Array.from(counts),
    days: Int32Array.from(days).sort(),
    ordinal,
  };
}

/** A history's change waiting in the owner's memory: the last segment merged into it (`seq`), and the first. */
export interface WaitingChange extends SequencedChange {
  first: number;
}

/** History changes the owner applied to its memory and has not written yet (the apply worker writes them). */
export const waitingHistories = () =>
  new WriteBehind<WaitingChange>({
    idOf: (waiting) => waiting.change.id,
    merge: (earlier, later) => {
      const change = mergeChanges(earlier.change, later.change);
      return change && { seq: later.seq, first: earlier.first, change };
    },
  });

const under = (path: string, field: string) => path === field || path.startsWith(`${field}.`);

/**
 * `later` applied after `earlier` as one update, as the database would apply the two in turn; null when `later`
 * adds under a field `earlier` removes (one update cannot remove a field and add to it).
 */
export function mergeChanges(earlier: DocumentChange, later: DocumentChange): DocumentChange | null {
  const removedBefore = earlier.unset ?? [];
  const removedAfter = later.unset ?? [];
  if (Object.keys(later.inc).some((path) => removedBefore.some((field) => under(path, field)))) return null;
  const inc: DocumentChange["inc"] = {};
  for (const [path, by] of Object.entries(earlier.inc)) {
    if (!removedAfter.some((field) => under(path, field))) inc[path] = by;
  }
  for (const [path, by] of Object.entries(later.inc)) inc[path] = path in inc ? sum(inc[path], by) : by;
  const set = { ...earlier.set, ...later.set };
  for (const field of removedAfter) delete set[field];
  const unset = [...new Set([...removedBefore.filter((field) => !(field in (later.set ?? {}))), ...removedAfter])];
  return { id: earlier.id, inc, set, unset, init: earlier.init };
}

function sum(a: number | Long, b: number | Long): number | Long {
  return typeof a === "number" && typeof b === "number" ? a + b : Long.fromValue(a).add(b);
}

/** Writing the history changes that waited failed for these projects (their changes wait on). */
export class HistoryWriteFailed extends Error {
  constructor(
    readonly projectIds: readonly string[],
    cause?: unknown,
  ) {
    super(`writing the waiting player histories failed for ${projectIds.length} project(s)`, { cause });
    this.name = "HistoryWriteFailed";
  }
}
