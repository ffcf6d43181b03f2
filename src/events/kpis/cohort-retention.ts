import { nameField } from "../names.js";
import type { CohortActivity } from "./player-activity.js";
import { dayNumber, dayOfNumber, periodOf, periodStart } from "./periods.js";

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
const NONE = -(2 ** 31);

/**
 * The retention table of each cohort of `activity`: per start period from `from` to `to`, the players whose first
 * event (of `startName`) falls in it, and per period k after it those with an event (of `returnName`) in period
 * start+k (n_day) or in it or any later one (unbounded), for each k up to `periods` that has begun.
 */
export function retentionTables(activity: CohortActivity, spec: RetentionSpec): RetentionCohort[][] {
  const { interval, periods } = spec;
  const [fromPeriod, toPeriod, todayPeriod] = [spec.from, spec.to, spec.today].map((day) => periodOf(day, interval));
  const startField = spec.startName === undefined ? null : nameField(spec.startName);
  const returnField = spec.returnName === undefined ? null : nameField(spec.returnName);
  const slotPeriod = new Int32Array(activity.pairs.length);
  const isStart = new Uint8Array(activity.pairs.length);
  const isReturn = new Uint8Array(activity.pairs.length);
  activity.pairs.forEach(({ day, field }, slot) => {
    const number = dayNumber(day);
    slotPeriod[slot] = number >= spec.firstDay ? periodOf(number, interval) : NONE;
    isStart[slot] = startField === null || field === startField ? 1 : 0;
    isReturn[slot] = returnField === null || field === returnField ? 1 : 0;
  });
  const cohortCount = toPeriod - fromPeriod + 1;
  const seen = new Int32Array(periods + 1).fill(-1);
  const unbounded = spec.mode === "unbounded";
  return activity.cohorts.map((histories) => {
    const players = new Array<number>(cohortCount).fill(0);
    const returned = Array.from({ length: cohortCount }, () => new Int32Array(periods + 1));
    histories.forEach(({ slots }, player) => {
      let start = Infinity;
      for (let i = 0; i < slots.length; i++) {
        const period = slotPeriod[slots[i]];
        if (isStart[slots[i]] && period !== NONE && period < start) start = period;
      }
      if (start < fromPeriod || start > toPeriod) return;
      const row = returned[start - fromPeriod];
      players[start - fromPeriod]++;
      let last = -1;
      for (let i = 0; i < slots.length; i++) {
        const slot = slots[i];
        if (!isReturn[slot] || slotPeriod[slot] === NONE) continue;
        const k = slotPeriod[slot] - start;
        if (k < 0) continue;
        if (k > last) last = k;
        if (unbounded || k > periods || seen[k] === player) continue;
        seen[k] = player;
        row[k]++;
      }
      if (unbounded) for (let k = 0; k <= Math.min(last, periods); k++) row[k]++;
    });
    seen.fill(-1);
    return players.map((count, i) => {
      const period = fromPeriod + i;
      const begun = Math.min(periods, todayPeriod - period);
      return {
        date: dayOfNumber(Math.max(spec.from, periodStart(period, interval))),
        players: count,
        returned: Array.from(returned[i].subarray(0, Math.max(0, begun + 1))),
      };
    });
  });
}
