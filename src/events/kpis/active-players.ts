import { Bitmap } from "../../sets/bitmap.js";
import { countIn, type Cohort } from "../reads/cohort-counts.js";
import type { DaySetReader, DaySets } from "../reads/day-sets.js";
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

/**
 * Per cohort and day of the range, by set arithmetic over `sets` (the window's days through the range's end):
 * distinct players with an event (of `names`) that day, in the union of the 7 and of the 30 days ending on it, and
 * among that day's players less every earlier day's (their first day).
 */
export function activePoints(
  reader: DaySetReader,
  projectId: string,
  sets: DaySets,
  spec: ActiveSpec,
  cohorts: readonly Cohort[],
): ActivePoint[][] {
  const { firstDay, names } = spec;
  const windowDays = Array.from({ length: spec.to - firstDay + 1 }, (_, i) => dayOfNumber(firstDay + i));
  const first = reader.firstDays(projectId, windowDays, sets, names);
  const playersOn = (day: number) =>
    day < firstDay ? undefined : reader.playersOf(projectId, dayOfNumber(day), sets, names);
  const unionOf = (day: number, width: number) => {
    const parts = Array.from({ length: width }, (_, i) => playersOn(day - i)).filter((set) => set !== undefined);
    return parts.length === 0 ? new Bitmap() : Bitmap.orMany(parts);
  };
  const days = Array.from({ length: spec.to - spec.from + 1 }, (_, i) => spec.from + i);
  const sets_ = days.map((day) => ({
    date: dayOfNumber(day),
    daily: playersOn(day) ?? new Bitmap(),
    weekly: unionOf(day, WEEK),
    monthly: unionOf(day, MONTH),
    fresh: day < firstDay ? new Bitmap() : first.get(dayOfNumber(day))!,
  }));
  return cohorts.map((cohort) =>
    sets_.map(({ date, daily, weekly, monthly, fresh }) => ({
      date,
      dau: countIn(daily, cohort),
      wau: countIn(weekly, cohort),
      mau: countIn(monthly, cohort),
      newPlayers: countIn(fresh, cohort),
    })),
  );
}
