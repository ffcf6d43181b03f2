import { projectOfId, projectScopedId } from "../../db/ids.js";
import type { OwnerMemory } from "../../db/owner-memory.js";
import type { DocumentChange } from "../apply/absorb.js";
import type { CohortDays } from "./cohort-rollup-store.js";
import {
  applied,
  type HistorySlots,
  newHistory,
  type PlayerRollup,
  SlotNumbers,
  slotsOf,
  type SlottedRead,
} from "./player-rollup.js";
import { addToSlot, type SumDays } from "../reads/sums.js";

interface Remembered {
  projectId: string;
  rollup: PlayerRollup;
  /** The last queue segment the stored document absorbed (-1: no document). */
  hw: number;
  bytes: number;
  /** The history as (day, name) slot numbers of its project and their counts (what a chart sums), and its days. */
  slots: Int32Array;
  counts: Int32Array;
  days: Int32Array;
  /** Its player's number in the project, kept when the history is replaced (HistorySlots). */
  ordinal: number;
}

/**
 * A history's size in memory, with its entry and its slot arrays: calibrated on Node 20's heap (bench/README.md,
 * "Memory of histories": 20,000 histories of 1 to 30 days and 1 to 5 names, within 5 % of the estimate).
 */
function sizeOf(rollup: PlayerRollup): number {
  let bytes = 1130 + 2 * rollup.identityKey.length + 24 * rollup.cohorts.length;
  for (const names of Object.values(rollup.days)) bytes += 30 + 8 * Object.keys(names).length;
  for (const names of Object.values(rollup.sums)) bytes += 30 + 40 * Object.keys(names).length;
  return bytes;
}

/** A stored history as a scan or a read found it. */
export interface FoundHistory {
  id: string;
  rollup: PlayerRollup;
  hw: number;
}

/**
 * The owner's memory of player histories (event_player_rollups; embedded FerretDB only): a history read once is
 * kept, and every rollup write of the worker (absorb, the only writer) is applied to it once acknowledged, with the
 * same high-water guard as the database; in a whole project the worker's changes are applied here first and written
 * behind (waitingHistories, player-rollup.ts), so the memory is ahead of the database until then. The worker fills a project
 * whole by one scan at its first read, after which a player not remembered has no history (new players cost no
 * read). A write that fails forgets the documents it touched and the wholeness of their projects; a sweep forgets
 * everything. Past the budget, new histories are not kept and are read again.
 */
export class HistoryMemory {
  private readonly remembered = new Map<string, Remembered>();
  /** The remembered histories of each project, by identity key. */
  private readonly byProject = new Map<string, Map<string, Remembered>>();
  private readonly slotNumbers = new Map<string, SlotNumbers>();
  /**
   * Per project, the remembered histories by ordinal (a read indexes arrays by them, not a map of its players):
   * numbered on, never again from 0, so a number stays one key's while its history is remembered.
   */
  private readonly byOrdinal = new Map<string, (Remembered | undefined)[]>();
  /** Projects whose every history is remembered: a player missing from memory has none. */
  private readonly whole = new Set<string>();
  /** Fills in flight, by project: concurrent reads share one scan. */
  private readonly filling = new Map<string, Promise<void>>();
  /** Projects that did not fit, with the bytes they needed: not scanned again until that much is free. */
  private readonly tooLarge = new Map<string, number>();
  /** Moves at every write: a read that began before one may hold what that write changed. */
  private writes = 0;

  constructor(private readonly budget: OwnerMemory) {}

  /** The known history by document `_id` (null: known to have none), or undefined when not in memory. */
  get(projectId: string, id: string): PlayerRollup | null | undefined {
    const known = this.remembered.get(id);
    if (known) return known.hw < 0 ? null : known.rollup;
    return this.whole.has(projectId) ? null : undefined;
  }

  /** Every history of the project is remembered. */
  holdsWhole(projectId: string): boolean {
    return this.whole.has(projectId);
  }

  /** Makes the project whole in memory from `scan` (every history of the project), when it fits and no write came meanwhile. */
  async fill(projectId: string, scan: () => Promise<FoundHistory[]>): Promise<void> {
    if (this.whole.has(projectId)) return;
    const needed = this.tooLarge.get(projectId);
    if (needed !== undefined && !this.budget.fits(needed)) return;
    let filling = this.filling.get(projectId);
    if (!filling) {
      filling = this.load(projectId, scan).finally(() => this.filling.delete(projectId));
      this.filling.set(projectId, filling);
    }
    return filling;
  }

  private async load(projectId: string, scan: () => Promise<FoundHistory[]>): Promise<void> {
    const epoch = this.writes;
    const found = await scan();
    // A write meanwhile may be missing from what the scan saw; the next read scans again.
    if (epoch !== this.writes) return;
    for (const { id, rollup, hw } of found) {
      if (this.remembered.has(id)) continue;
      if (!this.keep(projectId, id, rollup, hw)) {
        this.tooLarge.set(
          projectId,
          found.reduce((sum, one) => sum + sizeOf(one.rollup), 0),
        );
        return;
      }
    }
    this.tooLarge.delete(projectId);
    this.whole.add(projectId);
  }

  /** Where writes stand, taken before a read of the database. */
  get epoch(): number {
    return this.writes;
  }

  /** What a read begun at `epoch` found (null: no document); kept only if no write came in between. */
  read(
    epoch: number,
    projectId: string,
    identityKey: string,
    found: { id: string; rollup: PlayerRollup; hw: number } | null,
  ): void {
    const id = found?.id ?? projectScopedId(projectId, identityKey);
    if (epoch !== this.writes || this.remembered.has(id)) return;
    const rollup = found?.rollup ?? { identityKey, days: {}, sums: {}, cohorts: [], foldedInto: null, hw: -1 };
    this.keep(projectId, id, rollup, found?.hw ?? -1);
  }

  /**
   * Adds the remembered histories of `identityKeys` on `days` to `totals`
   * (events, one player per day and name with any, the sums of `sumIds`);
   * answers the keys not in memory.
   */
  sum(
    projectId: string,
    identityKeys: readonly string[],
    days: ReadonlySet<string>,
    totals: CohortDays,
    sumIds: ReadonlySet<string> = new Set(),
  ): string[] {
    const numbers = this.slotNumbers.get(projectId);
    const events = new Float64Array(numbers?.pairs.length ?? 0);
    const players = new Float64Array(events.length);
    const missing: string[] = [];
    const whole = this.whole.has(projectId);
    for (const key of identityKeys) {
      const known = this.remembered.get(projectScopedId(projectId, key));
      if (!known) {
        if (!whole) missing.push(key);
        continue;
      }
      const { slots, counts } = known;
      for (let i = 0; i < slots.length; i++) {
        events[slots[i]] += counts[i];
        players[slots[i]] += 1;
      }
      if (sumIds.size > 0) addSums(known.rollup.sums, days, totals, sumIds);
    }
    numbers?.pairs.forEach(({ day, field }, slot) => {
      if (players[slot] === 0 || !days.has(day)) return;
      const total = ((totals[day] ??= {})[field] ??= { e: 0, p: 0 });
      total.e += events[slot];
      total.p += players[slot];
    });
    return missing;
  }

  /**
   * The remembered histories of the keys of `identityKeys` (lists that may overlap; every one of the project when
   * null, only if it is whole) as slots of the project's pairs, with the keys not in memory; null when the project is
   * not whole and all were asked. A whole project answers its own map, uncopied, read before the next write (a
   * history known to have none has no slots).
   */
  slotted(projectId: string, identityKeys: readonly (readonly string[])[] | null): SlottedRead | null {
    const ofProject = this.byProject.get(projectId) ?? new Map<string, Remembered>();
    const numbers = this.numbersOf(projectId);
    const byOrdinal = this.ordinalsOf(projectId);
    const ordinals = byOrdinal.length;
    if (this.whole.has(projectId)) return { numbers, players: ofProject, ordinals, byOrdinal, missing: [] };
    if (identityKeys === null) return null;
    const players = new Map<string, HistorySlots>();
    const missing = new Set<string>();
    for (const keys of identityKeys) {
      for (const key of keys) {
        const known = ofProject.get(key);
        if (!known) missing.add(key);
        else if (known.hw >= 0) players.set(key, known);
      }
    }
    return { numbers, players, ordinals, missing: [...missing] };
  }

  /** The project's slot numbers, which histories read from the database may extend. */
  numbersOf(projectId: string): SlotNumbers {
    let numbers = this.slotNumbers.get(projectId);
    if (!numbers) this.slotNumbers.set(projectId, (numbers = new SlotNumbers()));
    return numbers;
  }

  private ordinalsOf(projectId: string): (Remembered | undefined)[] {
    let byOrdinal = this.byOrdinal.get(projectId);
    if (!byOrdinal) this.byOrdinal.set(projectId, (byOrdinal = []));
    return byOrdinal;
  }

  /** Segment `seq`'s acknowledged changes, applied where the remembered document had not absorbed it. */
  absorbed(seq: number, changes: readonly DocumentChange[]): void {
    this.writes++;
    for (const change of changes) {
      const projectId = projectOfId(change.id);
      // In a whole project a history not remembered is new: it starts as the database starts it.
      const known =
        this.remembered.get(change.id) ??
        (this.whole.has(projectId) ? { rollup: newHistory(change), hw: -1 } : undefined);
      if (!known || known.hw >= seq) continue;
      this.drop(change.id);
      const rollup = applied(known.rollup, change, seq);
      if (!this.keep(projectId, change.id, rollup, seq, "ordinal" in known ? known.ordinal : undefined)) {
        this.whole.delete(projectId);
      }
    }
  }

  /** Documents a failed write may or may not have changed. */
  forget(changes: readonly { id: string }[]): void {
    this.writes++;
    for (const { id } of changes) {
      this.whole.delete(projectOfId(id));
      this.drop(id);
    }
  }

  /** Histories deleted from the database (idle past the retention window): a whole project stays whole without them. */
  deleted(ids: readonly string[]): void {
    this.writes++;
    for (const id of ids) this.drop(id);
  }

  forgetAll(): void {
    this.forget([...this.remembered.keys()].map((id) => ({ id })));
    this.whole.clear();
    this.slotNumbers.clear();
  }

  private drop(id: string): void {
    const known = this.remembered.get(id);
    if (!known) return;
    this.remembered.delete(id);
    this.byProject.get(known.projectId)?.delete(known.rollup.identityKey);
    this.ordinalsOf(known.projectId)[known.ordinal] = undefined;
    this.budget.give(known.bytes);
  }

  /** False when the history does not fit the budget (it is not kept). A replaced history keeps its `ordinal`. */
  private keep(projectId: string, id: string, rollup: PlayerRollup, hw: number, ordinal?: number): boolean {
    const bytes = sizeOf(rollup);
    if (!this.budget.take(bytes)) return false;
    const byOrdinal = this.ordinalsOf(projectId);
    ordinal ??= byOrdinal.length;
    const known = { projectId, rollup, hw, bytes, ...slotsOf(rollup.days, this.numbersOf(projectId), ordinal) };
    byOrdinal[ordinal] = known;
    this.remembered.set(id, known);
    let ofProject = this.byProject.get(projectId);
    if (!ofProject) this.byProject.set(projectId, (ofProject = new Map()));
    ofProject.set(rollup.identityKey, known);
    return true;
  }
}

/** Adds a history's sums of `sumIds` on `days` to the chart's slots (a player with a sum has events there). */
function addSums(sums: SumDays, days: ReadonlySet<string>, totals: CohortDays, sumIds: ReadonlySet<string>): void {
  for (const [day, fields] of Object.entries(sums)) {
    if (!days.has(day)) continue;
    for (const [field, ofField] of Object.entries(fields)) {
      addToSlot(((totals[day] ??= {})[field] ??= { e: 0, p: 0 }), ofField, sumIds);
    }
  }
}
