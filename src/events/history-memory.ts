import type { OwnerMemory } from "../db/owner-memory.js";
import type { DocumentChange } from "./absorb.js";
import type { PlayerRollup } from "./player-rollup-store.js";

interface Remembered {
  rollup: PlayerRollup;
  /** The last queue segment the stored document absorbed (-1: no document). */
  hw: number;
  bytes: number;
}

/** A rough size in memory: fixed overhead, then per day and per name counted. */
function sizeOf(rollup: PlayerRollup): number {
  let bytes = 300 + 2 * rollup.identityKey.length;
  for (const names of Object.values(rollup.days)) bytes += 120 + 60 * Object.keys(names).length;
  return bytes;
}

/**
 * The owner's memory of player histories (event_player_rollups; embedded
 * FerretDB only): a history read once is kept, and every rollup write of the
 * worker (absorb, the only writer) is applied to it once acknowledged, with
 * the same high-water guard as the database. A write that fails forgets the
 * documents it touched; a sweep forgets everything. Past the budget, new
 * histories are not kept and are read again.
 */
export class HistoryMemory {
  private readonly remembered = new Map<string, Remembered>();

  constructor(private readonly budget: OwnerMemory) {}

  /** The known history by document `_id` (null: known to have none), or undefined when not in memory. */
  get(id: string): PlayerRollup | null | undefined {
    const known = this.remembered.get(id);
    return known && (known.hw < 0 ? null : known.rollup);
  }

  /** What a read found (null: no document). */
  read(id: string, identityKey: string, found: { rollup: PlayerRollup; hw: number } | null): void {
    if (this.remembered.has(id)) return;
    const rollup = found?.rollup ?? { identityKey, days: {}, cohorts: [], foldedInto: null };
    this.keep(id, rollup, found?.hw ?? -1);
  }

  /** Segment `seq`'s acknowledged changes, applied where the remembered document had not absorbed it. */
  absorbed(seq: number, changes: readonly DocumentChange[]): void {
    for (const change of changes) {
      const known = this.remembered.get(change.id);
      if (!known || known.hw >= seq) continue;
      this.forget([change]);
      this.keep(change.id, applied(known.rollup, change), seq);
    }
  }

  /** Documents a failed write may or may not have changed. */
  forget(changes: readonly { id: string }[]): void {
    for (const { id } of changes) {
      const known = this.remembered.get(id);
      if (!known) continue;
      this.remembered.delete(id);
      this.budget.give(known.bytes);
    }
  }

  forgetAll(): void {
    this.forget([...this.remembered.keys()].map((id) => ({ id })));
  }

  private keep(id: string, rollup: PlayerRollup, hw: number): void {
    const bytes = sizeOf(rollup);
    if (this.budget.take(bytes)) this.remembered.set(id, { rollup, hw, bytes });
  }
}

/** A history with one planned change applied, as the database applies its `$inc`, `$set` and `$unset`. */
function applied(rollup: PlayerRollup, change: DocumentChange): PlayerRollup {
  const days: PlayerRollup["days"] = Object.fromEntries(
    Object.entries(rollup.days).map(([day, names]) => [day, { ...names }]),
  );
  for (const path of change.unset ?? []) {
    const [, day] = path.split(".");
    if (path === "days") for (const one of Object.keys(days)) delete days[one];
    else if (day !== undefined) delete days[day];
  }
  for (const [path, by] of Object.entries(change.inc)) {
    const [, day, field] = path.split(".");
    const names = (days[day] ??= {});
    names[field] = (names[field] ?? 0) + by;
  }
  const set = change.set ?? {};
  return {
    identityKey: rollup.identityKey,
    days,
    cohorts: "cohorts" in set ? (set.cohorts as string[]) : rollup.cohorts,
    foldedInto: "folded_into" in set ? (set.folded_into as string | null) : rollup.foldedInto,
  };
}
