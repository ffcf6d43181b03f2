/**
 * Players grouped by the set of cohorts they are in: the KPIs add a player to its group once, then each group to
 * its cohorts, rather than each player to each of its cohorts.
 */
export interface CohortGroups {
  /** Per player, its group. */
  groupOf: Int32Array;
  /** Per group, its cohorts in order. */
  groups: Int32Array[];
}

/** The groups of `rows` players whose cohorts are the bits of `masks` (`words` 32-bit words a player). */
export function groupsOf(masks: Uint32Array, words: number, rows: number): CohortGroups {
  const groupOf = new Int32Array(rows);
  const groups: Int32Array[] = [];
  // One word (up to 32 cohorts, a split's usual size) is its own key; more are joined.
  const known = new Map<number | string, number>();
  for (let row = 0; row < rows; row++) {
    const at = row * words;
    const key = words === 1 ? masks[at] : masks.subarray(at, at + words).join();
    let group = known.get(key);
    if (group === undefined) {
      group = groups.push(cohortsOf(masks.subarray(at, at + words))) - 1;
      known.set(key, group);
    }
    groupOf[row] = group;
  }
  return { groupOf, groups };
}

/** The cohorts whose bits are set in `mask`, in order. */
function cohortsOf(mask: Uint32Array): Int32Array {
  const cohorts: number[] = [];
  mask.forEach((word, w) => {
    for (let bit = 0; bit < 32; bit++) if ((word >>> bit) & 1) cohorts.push(w * 32 + bit);
  });
  return Int32Array.from(cohorts);
}

/**
 * Adds each group's figures (`perGroup`: `width` numbers a group, from `groupFigures`) to each of its cohorts'
 * (`into`: `width` numbers a cohort).
 */
export function addGroups(
  groups: readonly Int32Array[],
  perGroup: ArrayLike<number>,
  width: number,
  into: Int32Array | Float64Array,
): void {
  groups.forEach((cohorts, group) => {
    const from = group * width;
    for (const cohort of cohorts) {
      const to = cohort * width;
      for (let i = 0; i < width; i++) into[to + i] += perGroup[from + i];
    }
  });
}
