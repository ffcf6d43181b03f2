import { nameField } from "../rollup-keys.js";
import { addGroups } from "./cohort-groups.js";
import type { CohortActivity } from "./player-activity.js";
import { dayOfNumber } from "./periods.js";

/** Days a weekly and a monthly active player may have been active in, ending on the day counted. */
const WEEK = 7;
const MONTH = 30;

export interface ActiveSpec {
  /** The range, as dayNumber()s. */
  from: number;
  to: number;
  /** The names that count as activity; every name when absent. */
  names?: readonly string[];
  /** The first day inside the retention window: days before it count nothing. */
  firstDay: number;
}

export interface ActivePoint {
  date: string;
  dau: number;
  wau: number;
  mau: number;
  newPlayers: number;
}

/** Marks a slot that counts nothing (another name, or before the window). */
const NONE = -(2 ** 31);
/** A first day not found yet: after every day, a small integer (V8 Smi: 31 bits). */
const LATER = 2 ** 30 - 1;

/**
 * Per cohort of `activity` and day of the range: distinct players with an event (of `names`) that day, in the 7
 * and the 30 days ending on it, and whose first event (of `names`) ever was that day. Each player is read once, its
 * days and spans added to its group's, and each group's to its cohorts'.
 */
export function activePoints(activity: CohortActivity, spec: ActiveSpec): ActivePoint[][] {
  const length = spec.to - spec.from + 1;
  // Days from MONTH - 1 before the range to its end: offset 0 is the first of them.
  const windowStart = spec.from - (MONTH - 1);
  const fields = spec.names && new Set(spec.names.map(nameField));
  const slotDay = Int32Array.from(activity.slotDays, (day, slot) =>
    day >= spec.firstDay && (!fields || fields.has(activity.pairs[slot].field)) ? day : NONE,
  );
  const marked = new Int32Array(length + MONTH - 1).fill(-1);
  // A player's active days of `names` as window offsets (ascending), then as runs: reused for every player.
  const active = new Int32Array(marked.length);
  const own = new Int32Array(2 * marked.length);
  const { groups, groupOf, ranges } = activity;
  const { runs, slots } = activity.columns;
  // Per group of players of the same cohorts, then added to each of them.
  const groupDaily = new Int32Array(groups.length * (length + 1));
  const groupNew = new Int32Array(groups.length * length);
  const groupWeekly = new Int32Array(groups.length * (length + 1));
  const groupMonthly = new Int32Array(groups.length * (length + 1));
  // Plain loops over the packed columns: a player's figures stay in registers (this runs once per player).
  for (let player = 0; player < activity.rows; player++) {
    const group = groupOf[player];
    const at = group * (length + 1);
    let first = LATER;
    if (!fields) {
      // Its runs of days as they are, those before the window left out.
      const runEnd = ranges[4 * player + 1];
      let i = ranges[4 * player];
      while (i < runEnd && runs[i + 1] < spec.firstDay) i += 2;
      if (i < runEnd) first = Math.max(runs[i], spec.firstDay);
      const shift = -spec.from;
      addRuns(groupDaily, at, runs, i, runEnd, spec.firstDay, 1, shift, length);
      addRuns(groupWeekly, at, runs, i, runEnd, spec.firstDay, WEEK, shift, length);
      addRuns(groupMonthly, at, runs, i, runEnd, spec.firstDay, MONTH, shift, length);
    } else {
      let count = 0;
      for (let i = ranges[4 * player + 2]; i < ranges[4 * player + 3]; i++) {
        const day = slotDay[slots[i]];
        if (day === NONE) continue;
        if (day < first) first = day;
        const offset = day - windowStart;
        if (offset < 0 || offset >= marked.length || marked[offset] === player) continue;
        marked[offset] = player;
        active[count++] = offset;
      }
      active.subarray(0, count).sort();
      let end = 0;
      for (let i = 0; i < count; i++) {
        if (end > 0 && active[i] === own[end - 1] + 1) own[end - 1] = active[i];
        else {
          own[end++] = active[i];
          own[end++] = active[i];
        }
      }
      const shift = windowStart - spec.from;
      addRuns(groupDaily, at, own, 0, end, 0, 1, shift, length);
      addRuns(groupWeekly, at, own, 0, end, 0, WEEK, shift, length);
      addRuns(groupMonthly, at, own, 0, end, 0, MONTH, shift, length);
    }
    if (first >= spec.from && first <= spec.to) groupNew[group * length + first - spec.from]++;
  }
  const daily = new Int32Array(activity.cohorts * (length + 1));
  const newPlayers = new Int32Array(activity.cohorts * length);
  const weekly = new Int32Array(activity.cohorts * (length + 1));
  const monthly = new Int32Array(activity.cohorts * (length + 1));
  addGroups(groups, groupDaily, length + 1, daily);
  addGroups(groups, groupNew, length, newPlayers);
  addGroups(groups, groupWeekly, length + 1, weekly);
  addGroups(groups, groupMonthly, length + 1, monthly);
  const dates = Array.from({ length }, (_, i) => dayOfNumber(spec.from + i));
  return Array.from({ length: activity.cohorts }, (_, cohort) => {
    const dau = running(daily.subarray(cohort * (length + 1), (cohort + 1) * (length + 1)));
    const wau = running(weekly.subarray(cohort * (length + 1), (cohort + 1) * (length + 1)));
    const mau = running(monthly.subarray(cohort * (length + 1), (cohort + 1) * (length + 1)));
    return Array.from({ length }, (_, i) => ({
      date: dates[i],
      dau: dau[i],
      wau: wau[i],
      mau: mau[i],
      newPlayers: newPlayers[cohort * length + i],
    }));
  });
}

/**
 * Counts a player once on each range index (of `length`) within `width` days after a day of its runs (pairs of
 * first and last day, ascending, in runs[from, end); days before `floor` left out; `shift` turns a day into a range
 * index), as differences from `at`: per merged span [low, high], +1 at low and -1 past high.
 */
function addRuns(
  differences: Int32Array,
  at: number,
  runs: Int32Array,
  from: number,
  end: number,
  floor: number,
  width: number,
  shift: number,
  length: number,
): void {
  let low = 0;
  let high = -2;
  for (let i = from; i < end; i += 2) {
    if (runs[i + 1] < floor) continue;
    const start = Math.max(runs[i], floor) + shift;
    const stop = runs[i + 1] + shift + width - 1;
    if (high >= low && start <= high + 1) {
      if (stop > high) high = stop;
      continue;
    }
    addSpan(differences, at, low, high, length);
    low = start;
    high = stop;
  }
  addSpan(differences, at, low, high, length);
}

/** +1 at `low` and -1 past `high`, clipped to the range (nothing when empty). */
function addSpan(differences: Int32Array, at: number, low: number, high: number, length: number): void {
  const from = Math.max(low, 0);
  const to = Math.min(high, length - 1);
  if (from > to) return;
  differences[at + from]++;
  differences[at + to + 1]--;
}

function running(differences: Int32Array): number[] {
  let total = 0;
  return Array.from(differences.subarray(0, differences.length - 1), (difference) => (total += difference));
}
