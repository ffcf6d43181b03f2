import { nameField } from "../names.js";
import { cohortsOf, type CohortActivity } from "./player-activity.js";
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

/**
 * Per cohort of `activity` and day of the range: distinct players with an event (of `names`) that day, in the 7
 * and the 30 days ending on it, and whose first event (of `names`) ever was that day. Each player is read once, its
 * days and spans then added to every cohort it is in.
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
  // A player's active days as window offsets, ascending, its spans and its cohorts: reused for every player.
  const active = new Int32Array(marked.length);
  const weekSpans = new Int32Array(2 * marked.length);
  const monthSpans = new Int32Array(2 * marked.length);
  const cohorts = new Int32Array(activity.cohorts);
  const dau = new Int32Array(activity.cohorts * length);
  const newPlayers = new Int32Array(activity.cohorts * length);
  const weekly = new Int32Array(activity.cohorts * (length + 1));
  const monthly = new Int32Array(activity.cohorts * (length + 1));
  // Plain loops, no closures: a player's figures stay in registers (this runs once per player of a read).
  for (let player = 0; player < activity.players.length; player++) {
    const { slots, days } = activity.players[player];
    let first = Infinity;
    let count = 0;
    if (!fields) {
      for (let i = 0; i < days.length; i++) {
        if (days[i] < spec.firstDay) continue;
        if (first === Infinity) first = days[i];
        const offset = days[i] - windowStart;
        if (offset >= 0 && offset < marked.length) active[count++] = offset;
      }
    } else {
      for (let i = 0; i < slots.length; i++) {
        const day = slotDay[slots[i]];
        if (day === NONE) continue;
        if (day < first) first = day;
        const offset = day - windowStart;
        if (offset < 0 || offset >= marked.length || marked[offset] === player) continue;
        marked[offset] = player;
        active[count++] = offset;
      }
      active.subarray(0, count).sort();
    }
    const weeks = spansOf(active, count, WEEK, windowStart - spec.from, length, weekSpans);
    const months = spansOf(active, count, MONTH, windowStart - spec.from, length, monthSpans);
    const inCohorts = cohortsOf(activity, player, cohorts);
    for (let c = 0; c < inCohorts; c++) {
      const cohort = cohorts[c];
      if (first >= spec.from && first <= spec.to) newPlayers[cohort * length + first - spec.from]++;
      for (let i = 0; i < count; i++) if (active[i] >= MONTH - 1) dau[cohort * length + active[i] - (MONTH - 1)]++;
      addSpans(weekly, cohort * (length + 1), weekSpans, weeks);
      addSpans(monthly, cohort * (length + 1), monthSpans, months);
    }
  }
  return Array.from({ length: activity.cohorts }, (_, cohort) => {
    const wau = running(weekly.subarray(cohort * (length + 1), (cohort + 1) * (length + 1)));
    const mau = running(monthly.subarray(cohort * (length + 1), (cohort + 1) * (length + 1)));
    return Array.from({ length }, (_, i) => ({
      date: dayOfNumber(spec.from + i),
      dau: dau[cohort * length + i],
      wau: wau[i],
      mau: mau[i],
      newPlayers: newPlayers[cohort * length + i],
    }));
  });
}

/**
 * The range indexes (of `length`) within `width` days after one of the `count` first `active` days (ascending
 * window offsets; `shift` turns one into a range index), as merged spans [low, high] written to `into`; answers
 * how many.
 */
function spansOf(
  active: Int32Array,
  count: number,
  width: number,
  shift: number,
  length: number,
  into: Int32Array,
): number {
  let spans = 0;
  for (let i = 0; i < count;) {
    const start = active[i] + shift;
    let end = start + width - 1;
    for (i++; i < count && active[i] + shift <= end + 1; i++) end = active[i] + shift + width - 1;
    const low = Math.max(start, 0);
    const high = Math.min(end, length - 1);
    if (low > high) continue;
    into[2 * spans] = low;
    into[2 * spans++ + 1] = high;
  }
  return spans;
}

/** Counts a player once on each day of its `count` spans, as differences from `at`. */
function addSpans(differences: Int32Array, at: number, spans: Int32Array, count: number): void {
  for (let i = 0; i < count; i++) {
    differences[at + spans[2 * i]]++;
    differences[at + spans[2 * i + 1] + 1]--;
  }
}

function running(differences: Int32Array): number[] {
  let total = 0;
  return Array.from(differences.subarray(0, differences.length - 1), (difference) => (total += difference));
}
