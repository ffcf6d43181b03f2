import { Bitmap } from "../../sets/bitmap.js";
import { countIn, type Cohort } from "../reads/cohort-counts.js";
import type { DaySetReader, DaySets } from "../reads/day-sets.js";
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

/**
 * The retention table of each cohort, by set arithmetic over `sets` (the window's days, to today): a start period's
 * players are those whose first day (of `startName`) falls in it (each day's players less every earlier day's), and
 * period start+k's returns are those of them with activity (of `returnName`) in it (n_day), or in it or any later
 * period (unbounded: the union of every period from it on), for each k up to `periods` that has begun.
 */
export function retentionTables(
  reader: DaySetReader,
  projectId: string,
  sets: DaySets,
  spec: RetentionSpec,
  cohorts: readonly Cohort[],
): RetentionCohort[][] {
  const { interval, periods } = spec;
  const [fromPeriod, toPeriod, todayPeriod] = [spec.from, spec.to, spec.today].map((day) => periodOf(day, interval));
  const days = Array.from({ length: spec.today - spec.firstDay + 1 }, (_, i) => dayOfNumber(spec.firstDay + i));
  const start = spec.startName === undefined ? undefined : [spec.startName];
  const back = spec.returnName === undefined ? undefined : [spec.returnName];
  const first = reader.firstDays(projectId, days, sets, start);
  // Per period from the first start period to today's: its starting players and its returning ones.
  const starts = new Map<number, Bitmap[]>();
  const returns = new Map<number, Bitmap[]>();
  for (const day of days) {
    const period = periodOf(dayNumber(day), interval);
    if (period < fromPeriod) continue;
    if (period <= toPeriod) (starts.get(period) ?? starts.set(period, []).get(period)!).push(first.get(day)!);
    (returns.get(period) ?? returns.set(period, []).get(period)!).push(reader.playersOf(projectId, day, sets, back));
  }
  const union = (parts: Bitmap[] | undefined) => (parts?.length ? Bitmap.orMany(parts) : new Bitmap());
  const returning = new Map([...returns].map(([period, parts]) => [period, union(parts)]));
  if (spec.mode === "unbounded") {
    let later = new Bitmap();
    for (let period = todayPeriod; period >= fromPeriod; period--) {
      later = Bitmap.or(later, returning.get(period) ?? new Bitmap());
      returning.set(period, later);
    }
  }
  return cohortsOf(cohorts, { fromPeriod, toPeriod, todayPeriod, periods, spec }, (period) => {
    const players = union(starts.get(period));
    const returned = (k: number) => Bitmap.and(players, returning.get(period + k) ?? new Bitmap());
    return { players, returned };
  });
}

/** Each cohort's rows, from each start period's players and returns (made once, counted in every cohort). */
function cohortsOf(
  cohorts: readonly Cohort[],
  range: { fromPeriod: number; toPeriod: number; todayPeriod: number; periods: number; spec: RetentionSpec },
  period: (period: number) => { players: Bitmap; returned: (k: number) => Bitmap },
): RetentionCohort[][] {
  const { fromPeriod, toPeriod, todayPeriod, periods, spec } = range;
  const rows = Array.from({ length: toPeriod - fromPeriod + 1 }, (_, i) => {
    const at = fromPeriod + i;
    const begun = Math.max(0, Math.min(periods, todayPeriod - at) + 1);
    const { players, returned } = period(at);
    const returns = Array.from({ length: begun }, (_, k) => (players.isEmpty ? players : returned(k)));
    return { date: dayOfNumber(Math.max(spec.from, periodStart(at, spec.interval))), players, returns };
  });
  return cohorts.map((cohort) =>
    rows.map(({ date, players, returns }) => ({
      date,
      players: countIn(players, cohort),
      returned: returns.map((set) => countIn(set, cohort)),
    })),
  );
}
