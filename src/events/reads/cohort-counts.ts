import type { Bitmap } from "../../sets/bitmap.js";
import type { Slices } from "../../sets/bsi.js";

/** A cohort as the reads count it: its members, or every player of the activity but these. */
export type Cohort = { members: Bitmap } | { allBut: Bitmap };

/** How many of `set` are in the cohort: one native intersection count. */
export function countIn(set: Bitmap, cohort: Cohort): number {
  if ("members" in cohort) return cohort.members.andCardinality(set);
  return cohort.allBut.isEmpty ? set.size : set.size - set.andCardinality(cohort.allBut);
}

/** The total of a bit-sliced column's values over the cohort's members: Σ 2^k of each slice's count in it. */
export function totalIn(slices: Slices, cohort: Cohort): number {
  let total = 0;
  for (let k = 0; k < slices.length; k++) total += 2 ** k * countIn(slices[k], cohort);
  return total;
}
