import { nameField } from "../rollup-keys.js";
import { addGroups } from "./cohort-groups.js";
import type { CohortActivity } from "./player-activity.js";
import { dayOfNumber, periodOf, periodStart } from "./periods.js";

export type RetentionMode = "n_day" | "unbounded";

/** What a retention table counts, days as dayNumber()s. */
export interface RetentionSpec {
  from: number;
  to: number;
  interval: "day" | "week";
  periods: number;
  mode: RetentionMode;
  startName?: string;
  returnName?: string;
  /** Today: a period has begun once its first day is not after it. */
  today: number;
  /** The first day inside the retention window: days before it count nothing. */
  firstDay: number;
}

export interface RetentionCohort {
  date: string;
  players: number;
  returned: number[];
}

/** Marks a slot whose day is outside the window. */
const NONE = -(2 ** 30);
/** A start not found yet: after every period, and like every figure here a small integer (V8 Smi: 31 bits). */
const NEVER = 2 ** 30 - 1;

/**
 * The retention table of each cohort of `activity`: per start period from `from` to `to`, the players whose first
 * event (of `startName`) falls in it, and per period k after it those with an event (of `returnName`) in period
 * start+k (n_day) or in it or any later one (unbounded), for each k up to `periods` that has begun. Each player is
 * read once, its start and returns added to its group's table, and each group's table to its cohorts'.
 */
export function retentionTables(activity: CohortActivity, spec: RetentionSpec): RetentionCohort[][] {
  const { interval, periods } = spec;
  const [fromPeriod, toPeriod, todayPeriod] = [spec.from, spec.to, spec.today].map((day) => periodOf(day, interval));
  const startField = spec.startName === undefined ? null : nameField(spec.startName);
  const returnField = spec.returnName === undefined ? null : nameField(spec.returnName);
  const { firstDay } = spec;
  const slotPeriod = Int32Array.from(activity.slotDays, (day) => (day >= firstDay ? periodOf(day, interval) : NONE));
  // Each day's period from the window's first day to the last day with an event: a lookup, not a division.
  let lastDay = firstDay;
  for (const day of activity.slotDays) if (day > lastDay) lastDay = day;
  const periodAt = Int32Array.from({ length: lastDay - firstDay + 1 }, (_, i) => periodOf(firstDay + i, interval));
  const isStart = Uint8Array.from(activity.pairs, ({ field }) => (startField === null || field === startField ? 1 : 0));
  const isReturn = Uint8Array.from(activity.pairs, ({ field }) =>
    returnField === null || field === returnField ? 1 : 0,
  );
  const cohortCount = toPeriod - fromPeriod + 1;
  const width = periods + 1;
  const { groups, groupOf, ranges } = activity;
  const { runs, slots } = activity.columns;
  // Per group of players of the same cohorts, then added to each of them; returns as differences (+1 where a run
  // of consecutive periods begins, -1 past its end: a player active every day adds 2, not 30), a row of `span`.
  const span = width + 1;
  const groupPlayers = new Int32Array(groups.length * cohortCount);
  const groupRuns = new Int32Array(groups.length * cohortCount * span);
  const seen = new Int32Array(width).fill(-1);
  const unbounded = spec.mode === "unbounded";
  // Plain loops over the packed columns, small integers only (no Infinity: a double): this runs once per player.
  for (let player = 0; player < activity.rows; player++) {
    const runEnd = ranges[4 * player + 1];
    const slotAt = ranges[4 * player + 2];
    const slotEnd = ranges[4 * player + 3];
    let start = NEVER;
    // Its runs of days ascend: the first reaching into the window.
    let first = ranges[4 * player];
    while (first < runEnd && runs[first + 1] < firstDay) first += 2;
    if (startField === null) {
      if (first < runEnd) start = periodAt[Math.max(runs[first], firstDay) - firstDay];
    } else {
      for (let i = slotAt; i < slotEnd; i++) {
        const period = slotPeriod[slots[i]];
        if (isStart[slots[i]] === 1 && period !== NONE && period < start) start = period;
      }
    }
    if (start < fromPeriod || start > toPeriod) continue;
    const cell = groupOf[player] * cohortCount + start - fromPeriod;
    groupPlayers[cell]++;
    const row = cell * span;
    // Its returns: each period (after the start) with an event that returns, from its runs of days or its slots.
    let last = -1;
    if (returnField === null && unbounded) {
      last = first < runEnd ? periodAt[runs[runEnd - 1] - firstDay] - start : -1;
    } else if (returnField === null) {
      // A run of days is a run of periods [low, high]; ascending, so one that touches the last extends it.
      let low = -1;
      for (let i = first; i < runEnd; i += 2) {
        const high = Math.min(periodAt[runs[i + 1] - firstDay] - start, periods);
        if (high < 0) continue;
        const from = Math.max(periodAt[Math.max(runs[i], firstDay) - firstDay] - start, 0);
        if (from > periods) break;
        if (low >= 0 && from <= last + 1) {
          if (high > last) last = high;
          continue;
        }
        if (low >= 0) {
          groupRuns[row + low]++;
          groupRuns[row + last + 1]--;
        }
        low = from;
        last = high;
      }
      if (low >= 0) {
        groupRuns[row + low]++;
        groupRuns[row + last + 1]--;
      }
    } else {
      for (let i = slotAt; i < slotEnd; i++) {
        const period = isReturn[slots[i]] === 1 ? slotPeriod[slots[i]] : NONE;
        if (period === NONE || period < start) continue;
        const k = period - start;
        if (k > last) last = k;
        if (unbounded || k > periods || seen[k] === player) continue;
        seen[k] = player;
        groupRuns[row + k]++;
        groupRuns[row + k + 1]--;
      }
    }
    // Unbounded: every period up to the last with a return.
    if (unbounded && last >= 0) {
      groupRuns[row]++;
      groupRuns[row + Math.min(last, periods) + 1]--;
    }
  }
  const players = new Int32Array(activity.cohorts * cohortCount);
  const returned = new Int32Array(activity.cohorts * cohortCount * width);
  addGroups(groups, groupPlayers, cohortCount, players);
  // Row by row, a start period without players (no returns either) left out: most of a group's rows, often.
  const counts = new Int32Array(width);
  groups.forEach((cohorts, group) => {
    for (let i = 0; i < cohortCount; i++) {
      if (groupPlayers[group * cohortCount + i] === 0) continue;
      const from = (group * cohortCount + i) * span;
      for (let k = 0, total = 0; k < width; k++) counts[k] = total += groupRuns[from + k];
      for (const cohort of cohorts) {
        const to = (cohort * cohortCount + i) * width;
        for (let k = 0; k < width; k++) returned[to + k] += counts[k];
      }
    }
  });
  const dates = Array.from({ length: cohortCount }, (_, i) =>
    dayOfNumber(Math.max(spec.from, periodStart(fromPeriod + i, interval))),
  );
  return Array.from({ length: activity.cohorts }, (_, c) =>
    Array.from({ length: cohortCount }, (_, i) => {
      const period = fromPeriod + i;
      const begun = Math.min(periods, todayPeriod - period);
      const row = (c * cohortCount + i) * width;
      return {
        date: dates[i],
        players: players[c * cohortCount + i],
        returned: Array.from({ length: Math.max(0, begun + 1) }, (_, k) => returned[row + k]),
      };
    }),
  );
}
