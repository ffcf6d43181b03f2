/** Days as numbers (days since 1970-01-01, UTC) and the weeks and months they fall in: the KPIs' arithmetic. */

const DAY_MS = 24 * 60 * 60 * 1000;

export type Interval = "day" | "week" | "month";

export const dayNumber = (day: string): number => Date.parse(`${day}T00:00:00.000Z`) / DAY_MS;

export const dayOfNumber = (number: number): string => new Date(number * DAY_MS).toISOString().slice(0, 10);

/** The ISO week (Monday to Sunday, UTC) of a day, numbered from the one of 1970-01-01 (a Thursday). */
export const weekOf = (day: number): number => Math.floor((day + 3) / 7);

/** The Monday of a week of weekOf(). */
export const mondayOf = (week: number): number => week * 7 - 3;

/** A day's period of retention: the day itself, or its ISO week. */
export const periodOf = (day: number, interval: "day" | "week"): number => (interval === "week" ? weekOf(day) : day);

/** The first day of a period of periodOf(). */
export const periodStart = (period: number, interval: "day" | "week"): number =>
  interval === "week" ? mondayOf(period) : period;

/** The first day of the bucket (day, ISO week or month) a day falls in, as "YYYY-MM-DD". */
export function bucketStart(day: string, interval: Interval): string {
  if (interval === "day") return day;
  if (interval === "month") return `${day.slice(0, 7)}-01`;
  return dayOfNumber(mondayOf(weekOf(dayNumber(day))));
}

/**
 * The buckets of a range of days (in order): each day's bucket date, its first day clipped to the range's first
 * day, and the bucket dates in order.
 */
export function bucketsOf(
  days: readonly string[],
  interval: Interval,
): { dates: string[]; dateOf: Map<string, string> } {
  const dateOf = new Map<string, string>();
  const dates: string[] = [];
  for (const day of days) {
    const start = bucketStart(day, interval);
    const date = start < days[0] ? days[0] : start;
    if (dates.at(-1) !== date) dates.push(date);
    dateOf.set(day, date);
  }
  return { dates, dateOf };
}
