import type { HistorySlots } from "../rollups/player-rollup.js";

/**
 * A history's place in the columns: its runs of consecutive days in runs[runAt, runEnd) (pairs: first and last
 * day), its slots and counts in [slotAt, slotEnd).
 */
export interface ColumnRange {
  runAt: number;
  runEnd: number;
  slotAt: number;
  slotEnd: number;
}

/** The columns' arrays as one read sees them: later appends or a compaction do not change what it reads. */
export interface ColumnArrays {
  runs: Int32Array;
  slots: Int32Array;
  counts: Int32Array;
}

/**
 * Histories packed one after another in three contiguous arrays (their days as runs of consecutive days, their
 * slots and the events of each), so the KPIs' arithmetic streams through memory instead of visiting one object and
 * three arrays a player, and a player active every day of a month is one run, not 30 days. Kept
 * per project by the history ordinal of the owner's memory and brought up to date at each read: a history
 * replaced (a late event, a fold, a sweep) is a new object, packed again at the end; one dropped (an erasure,
 * the sweep of the idle) is left out. A range once written is never written again (appends go past the end, a
 * compaction writes new arrays), so a read keeps what it took while others append.
 */
export class ActivityColumns {
  private arrays: ColumnArrays;
  private runUsed = 0;
  private slotUsed = 0;
  /** Run ends and slots of the ranges still in use: past half of what is used, the columns are compacted. */
  private runLive = 0;
  private slotLive = 0;
  /** Per ordinal, the history packed (undefined: none) and its range. */
  private sources: (HistorySlots | undefined)[] = [];
  private ranges = new Int32Array(0);
  /** Moves whenever a history's range changes: what a read placed by ordinal stands while it stays. */
  private changes = 0;

  constructor(capacity = 1024) {
    this.arrays = { runs: new Int32Array(capacity), slots: new Int32Array(capacity), counts: new Int32Array(capacity) };
  }

  get version(): number {
    return this.changes;
  }

  /** The arrays now: the ranges given since the last compaction are in them. */
  get current(): ColumnArrays {
    return this.arrays;
  }

  /**
   * Brings the columns to `byOrdinal` (the owner's memory's histories by ordinal): a history not the one packed
   * for its ordinal is packed again, one gone is left out. Compacts when most of what is used is stale.
   */
  sync(byOrdinal: readonly (HistorySlots | undefined)[]): void {
    if (this.ranges.length < 4 * byOrdinal.length) {
      const ranges = new Int32Array(4 * Math.max(byOrdinal.length, 2 * this.sources.length));
      ranges.set(this.ranges);
      this.ranges = ranges;
    }
    for (let ordinal = 0; ordinal < byOrdinal.length; ordinal++) {
      const history = byOrdinal[ordinal];
      if (history === this.sources[ordinal]) continue;
      this.changes++;
      this.release(ordinal);
      this.sources[ordinal] = history;
      if (history) this.place(ordinal, this.append(history));
    }
    for (let ordinal = byOrdinal.length; ordinal < this.sources.length; ordinal++) {
      if (this.sources[ordinal]) this.changes++;
      this.release(ordinal);
      this.sources[ordinal] = undefined;
    }
    if (this.runUsed > 2 * this.runLive + 64 || this.slotUsed > 2 * this.slotLive + 64) this.compact();
  }

  /** Writes the range of `ordinal` (which must have a history) to `into` at `at`: runAt, runEnd, slotAt, slotEnd. */
  copyRange(ordinal: number, into: Int32Array, at: number): void {
    const { ranges } = this;
    for (let i = 0; i < 4; i++) into[at + i] = ranges[4 * ordinal + i];
  }

  /** Whether `ordinal` has a history packed. */
  has(ordinal: number): boolean {
    return this.sources[ordinal] !== undefined;
  }

  /**
   * Packs a history that belongs to no ordinal (a player changed and not yet moved, read as of now) for one read:
   * its range is stale at once, so a compaction will drop it.
   */
  appendLoose(history: HistorySlots): ColumnRange {
    const range = this.append(history);
    this.runLive -= range.runEnd - range.runAt;
    this.slotLive -= range.slotEnd - range.slotAt;
    return range;
  }

  private append({ days, slots, counts }: HistorySlots): ColumnRange {
    let length = days.length === 0 ? 0 : 2;
    for (let i = 1; i < days.length; i++) if (days[i] !== days[i - 1] + 1) length += 2;
    this.reserve(length, slots.length);
    const { arrays } = this;
    const range = {
      runAt: this.runUsed,
      runEnd: this.runUsed + length,
      slotAt: this.slotUsed,
      slotEnd: this.slotUsed + slots.length,
    };
    // Its days ascend, each once: a run ends where the next day is not the one after.
    for (let i = 0, at = range.runAt; i < days.length; i++) {
      if (i === 0 || days[i] !== days[i - 1] + 1) arrays.runs[at] = days[i];
      if (i === days.length - 1 || days[i + 1] !== days[i] + 1) arrays.runs[at + 1] = days[i];
      if (i < days.length - 1 && days[i + 1] !== days[i] + 1) at += 2;
    }
    arrays.slots.set(slots, range.slotAt);
    arrays.counts.set(counts, range.slotAt);
    this.runUsed = range.runEnd;
    this.slotUsed = range.slotEnd;
    this.runLive += length;
    this.slotLive += slots.length;
    return range;
  }

  private place(ordinal: number, { runAt, runEnd, slotAt, slotEnd }: ColumnRange): void {
    this.ranges.set([runAt, runEnd, slotAt, slotEnd], 4 * ordinal);
  }

  private release(ordinal: number): void {
    if (!this.sources[ordinal]) return;
    const at = 4 * ordinal;
    this.runLive -= this.ranges[at + 1] - this.ranges[at];
    this.slotLive -= this.ranges[at + 3] - this.ranges[at + 2];
  }

  /** Room for `runs` (run ends) and `slots` more past the end: new arrays when they do not fit. */
  private reserve(runs: number, slots: number): void {
    const { arrays } = this;
    if (this.runUsed + runs <= arrays.runs.length && this.slotUsed + slots <= arrays.slots.length) return;
    const grown = (array: Int32Array, needed: number) => {
      if (needed <= array.length) return array;
      const bigger = new Int32Array(Math.max(needed, 2 * array.length));
      bigger.set(array);
      return bigger;
    };
    this.arrays = {
      runs: grown(arrays.runs, this.runUsed + runs),
      slots: grown(arrays.slots, this.slotUsed + slots),
      counts: grown(arrays.counts, this.slotUsed + slots),
    };
  }

  /** Packs the live histories again into new arrays of their size (twice, for room), in ordinal order. */
  private compact(): void {
    const sources = this.sources;
    this.changes++;
    this.arrays = {
      runs: new Int32Array(2 * this.runLive + 1024),
      slots: new Int32Array(2 * this.slotLive + 1024),
      counts: new Int32Array(2 * this.slotLive + 1024),
    };
    this.runUsed = this.slotUsed = this.runLive = this.slotLive = 0;
    sources.forEach((history, ordinal) => history && this.place(ordinal, this.append(history)));
  }
}
