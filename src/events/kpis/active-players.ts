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
  return activity.cohorts.map((histories) => {
    const dau = new Array<number>(length).fill(0);
    const newPlayers = new Array<number>(length).fill(0);
    const weekly = new Array<number>(length + 1).fill(0);
    const monthly = new Array<number>(length + 1).fill(0);
    histories.forEach(({ slots }, player) => {
      let first = Infinity;
      for (const slot of slots) {
        const day = slotDay[slot];
        if (day === NONE) continue;
        first = Math.min(first, day);
        const offset = day - windowStart;
        if (offset >= 0 && offset < marked.length) marked[offset] = player;
      }
      if (first >= spec.from && first <= spec.to) newPlayers[first - spec.from]++;
      const active: number[] = [];
      for (let offset = 0; offset < marked.length; offset++) if (marked[offset] === player) active.push(offset);
      for (const offset of active) if (offset >= MONTH - 1) dau[offset - (MONTH - 1)]++;
      addSpans(weekly, active, WEEK, windowStart - spec.from);
      addSpans(monthly, active, MONTH, windowStart - spec.from);
    });
    marked.fill(-1);
    const wau = running(weekly);
    const mau = running(monthly);
    return dau.map((count, i) => ({
      date: dayOfNumber(spec.from + i),
      dau: count,
      wau: wau[i],
      mau: mau[i],
      newPlayers: newPlayers[i],
    }));
  });
}

/**
 * Counts a player once on each day of the range within `width` days after one of its `active` days (sorted window
 * offsets; `shift` turns one into a range index): the spans merged, added as differences.
 */
function addSpans(differences: number[], active: readonly number[], width: number, shift: number): void {
  const last = differences.length - 2;
  let [start, end] = [NaN, NaN];
  const flush = () => {
    const [low, high] = [Math.max(start, 0), Math.min(end, last)];
    if (low > high) return;
    differences[low]++;
    differences[high + 1]--;
  };
  for (const offset of active) {
    const day = offset + shift;
    if (day <= end + 1) end = day + width - 1;
    else {
      if (!Number.isNaN(start)) flush();
      [start, end] = [day, day + width - 1];
    }
  }
  if (!Number.isNaN(start)) flush();
}

function running(differences: readonly number[]): number[] {
  let total = 0;
  return differences.slice(0, -1).map((difference) => (total += difference));
}
