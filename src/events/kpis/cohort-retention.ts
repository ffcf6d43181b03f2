import { nameField } from "../names.js";
import { cohortsOf, type CohortActivity } from "./player-activity.js";
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
 * read once, its start and returns then added to every cohort it is in.
 */
export function retentionTables(activity: CohortActivity, spec: RetentionSpec): RetentionCohort[][] {
  const { interval, periods } = spec;
  const [fromPeriod, toPeriod, todayPeriod] = [spec.from, spec.to, spec.today].map((day) => periodOf(day, interval));
  const startField = spec.startName === undefined ? null : nameField(spec.startName);
  const returnField = spec.returnName === undefined ? null : nameField(spec.returnName);
  const { firstDay } = spec;
  const slotPeriod = Int32Array.from(activity.slotDays, (day) => (day >= firstDay ? periodOf(day, interval) : NONE));
  const isStart = Uint8Array.from(activity.pairs, ({ field }) => (startField === null || field === startField ? 1 : 0));
  const isReturn = Uint8Array.from(activity.pairs, ({ field }) =>
    returnField === null || field === returnField ? 1 : 0,
  );
  const cohortCount = toPeriod - fromPeriod + 1;
  const width = periods + 1;
  const players = new Int32Array(activity.cohorts * cohortCount);
  const returned = new Int32Array(activity.cohorts * cohortCount * width);
  const seen = new Int32Array(width).fill(-1);
  // A player's returns (periods after its start, each once) and cohorts: reused for every player.
  const returns = new Int32Array(width);
  const cohorts = new Int32Array(activity.cohorts);
  const unbounded = spec.mode === "unbounded";
  // Plain loops, no closures, small integers only (no Infinity: a double): this runs once per player of a read.
  for (let player = 0; player < activity.players.length; player++) {
    const { slots, days } = activity.players[player];
    let start = NEVER;
    if (startField === null) {
      // Its days ascend: the first inside the window.
      for (let i = 0; i < days.length && start === NEVER; i++)
        if (days[i] >= firstDay) start = periodOf(days[i], interval);
    } else {
      for (let i = 0; i < slots.length; i++) {
        const period = slotPeriod[slots[i]];
        if (isStart[slots[i]] === 1 && period !== NONE && period < start) start = period;
      }
    }
    if (start < fromPeriod || start > toPeriod) continue;
    // Its returns: each period (after the start) with an event that returns, from its days or its slots.
    let count = 0;
    let last = -1;
    if (returnField === null) {
      // Ascending days: a period's days come together, so a period is a new one when it differs from the last.
      for (let i = days.length - 1; i >= 0 && unbounded && last < 0; i--)
        if (days[i] >= firstDay) last = periodOf(days[i], interval) - start;
      for (let i = 0; i < days.length && !unbounded; i++) {
        if (days[i] < firstDay) continue;
        const k = periodOf(days[i], interval) - start;
        if (k > periods) break;
        if (k < 0 || k === last) continue;
        last = k;
        returns[count++] = k;
      }
    } else {
      for (let i = 0; i < slots.length; i++) {
        const period = isReturn[slots[i]] === 1 ? slotPeriod[slots[i]] : NONE;
        if (period === NONE || period < start) continue;
        const k = period - start;
        if (k > last) last = k;
        if (unbounded || k > periods || seen[k] === player) continue;
        seen[k] = player;
        returns[count++] = k;
      }
    }
    if (unbounded) for (let k = 0; k <= Math.min(last, periods); k++) returns[count++] = k;
    const inCohorts = cohortsOf(activity, player, cohorts);
    for (let c = 0; c < inCohorts; c++) {
      const cell = cohorts[c] * cohortCount + start - fromPeriod;
      players[cell]++;
      const row = cell * width;
      for (let i = 0; i < count; i++) returned[row + returns[i]]++;
    }
  }
  return Array.from({ length: activity.cohorts }, (_, c) =>
    Array.from({ length: cohortCount }, (_, i) => {
      const period = fromPeriod + i;
      const begun = Math.min(periods, todayPeriod - period);
      const row = (c * cohortCount + i) * width;
      return {
        date: dayOfNumber(Math.max(spec.from, periodStart(period, interval))),
        players: players[c * cohortCount + i],
        returned: Array.from(returned.subarray(row, row + Math.max(0, begun + 1))),
      };
    }),
  );
}
