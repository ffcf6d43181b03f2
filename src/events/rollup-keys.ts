/**
 * The keys activity is kept under: UTC calendar days as "YYYY-MM-DD" strings (and the retention window in days), and
 * event names as field names.
 */

const DAY_MS = 24 * 60 * 60 * 1000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

export const dayOf = (time: Date): string => time.toISOString().slice(0, 10);

/** "YYYY-MM" of a day: the activity's index of days keeps one document per month. */
export const monthOf = (day: string): string => day.slice(0, 7);

/** The Date of a day's midnight UTC, or null when `text` is not a real calendar date. */
export function parseDay(text: string): Date | null {
  if (!DATE.test(text)) return null;
  const date = new Date(`${text}T00:00:00.000Z`);
  return Number.isNaN(date.getTime()) || dayOf(date) !== text ? null : date;
}

/** Every day from `from` to `to`, inclusive. */
export function daysBetween(from: Date, to: Date): string[] {
  const days: string[] = [];
  for (let t = from.getTime(); t <= to.getTime(); t += DAY_MS) days.push(dayOf(new Date(t)));
  return days;
}

/** EVENT_RETENTION_DAYS ending today: what ingestion accepts, what reads count, what the worker's sweep keeps. */
export class RetentionWindow {
  constructor(readonly days: number) {}

  /** The oldest event time accepted now: the first day's midnight UTC. */
  oldest(now: Date): Date {
    return new Date(Date.parse(`${dayOf(now)}T00:00:00.000Z`) - (this.days - 1) * DAY_MS);
  }

  /** The first day inside the window. */
  firstDay(now: Date): string {
    return dayOf(this.oldest(now));
  }
}

/**
 * Event names become field names inside rollup documents. A name is letters,
 * digits and `_ - . :`; the `.` would split a field path, so it is stored as
 * `%` (never part of a name), behind a `_` that keeps every stored key clear
 * of anything an object or the database treats specially.
 */
export const nameField = (name: string): string => `_${name.replaceAll(".", "%")}`;

export const nameOfField = (field: string): string => field.slice(1).replaceAll("%", ".");
