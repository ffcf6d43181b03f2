import { nameField } from "../names.js";
import type { CohortActivity } from "./player-activity.js";
import { dayNumber, dayOfNumber } from "./periods.js";

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

/**
 * Per cohort of `activity` and day of the range: distinct players with an event (of `names`) that day, in the 7
 * and the 30 days ending on it, and whose first event (of `names`) ever was that day.
 */
export function activePoints(activity: CohortActivity, spec: ActiveSpec): ActivePoint[][] {
  const length = spec.to - spec.from + 1;
  // Days from MONTH - 1 before the range to its end: offset 0 is the first of them.
  const windowStart = spec.from - (MONTH - 1);
  const fields = spec.names && new Set(spec.names.map(nameField));
  const slotDay = new Int32Array(activity.pairs.length);
  activity.pairs.forEach(({ day, field }, slot) => {
    const number = dayNumber(day);
    slotDay[slot] = number >= spec.firstDay && (!fields || fields.has(field)) ? number : NONE;
  });
  const marked = new Int32Array(length + MONTH - 1).fill(-1);
  // A player's active days as window offsets, ascending: reused for every player.
  const active = new Int32Array(marked.length);
  return activity.cohorts.map((histories) => {
    const dau = new Int32Array(length);
    const newPlayers = new Int32Array(length);
    const weekly = new Int32Array(length + 1);
    const monthly = new Int32Array(length + 1);
    histories.forEach(({ slots }, player) => {
      let first = Infinity;
      let count = 0;
      let ascending = true;
      for (let i = 0; i < slots.length; i++) {
        const day = slotDay[slots[i]];
        if (day === NONE) continue;
        if (day < first) first = day;
        const offset = day - windowStart;
        if (offset < 0 || offset >= marked.length || marked[offset] === player) continue;
        marked[offset] = player;
        if (count > 0 && active[count - 1] > offset) ascending = false;
        active[count++] = offset;
      }
      if (first >= spec.from && first <= spec.to) newPlayers[first - spec.from]++;
      // Out of order (a late event's day): the marks, read across the window, are in order.
      if (!ascending) {
        count = 0;
        for (let offset = 0; offset < marked.length; offset++) if (marked[offset] === player) active[count++] = offset;
      }
      for (let i = 0; i < count; i++) if (active[i] >= MONTH - 1) dau[active[i] - (MONTH - 1)]++;
      addSpans(weekly, active, count, WEEK, windowStart - spec.from);
      addSpans(monthly, active, count, MONTH, windowStart - spec.from);
    });
    marked.fill(-1);
    const wau = running(weekly);
    const mau = running(monthly);
    return Array.from(dau, (count, i) => ({
      date: dayOfNumber(spec.from + i),
      dau: count,
      wau: wau[i],
      mau: mau[i],
      newPlayers: newPlayers[i],
    }));
  });
}

/**
 * Counts a player once on each day of the range within `width` days after one of its `count` first `active` days
 * (ascending window offsets; `shift` turns one into a range index): the spans merged, added as differences.
 */
function addSpans(differences: Int32Array, active: Int32Array, count: number, width: number, shift: number): void {
  const last = differences.length - 2;
  let start = 0;
  let end = -Infinity;
  const flush = () => {
    const low = Math.max(start, 0);
    const high = Math.min(end, last);
    if (low > high) return;
    differences[low]++;
    differences[high + 1]--;
  };
  for (let i = 0; i < count; i++) {
    const day = active[i] + shift;
    if (day <= end + 1) end = day + width - 1;
    else {
      if (end !== -Infinity) flush();
      start = day;
      end = day + width - 1;
    }
  }
  if (end !== -Infinity) flush();
}

function running(differences: Int32Array): number[] {
  let total = 0;
  return Array.from(differences.subarray(0, differences.length - 1), (difference) => (total += difference));
}
