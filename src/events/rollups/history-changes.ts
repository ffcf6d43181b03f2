import type { DocumentChange } from "../apply/absorb.js";
import type { PlayerRollup } from "./player-rollup.js";
import { addSum, type SumDays } from "../reads/sums.js";

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
