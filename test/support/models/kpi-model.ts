/**
 * The KPIs as brute force over raw events ({name, player, day}, each under the player it counts for now, of the
 * players in the filter): an implementation of its own, by calendar, to hold the service's answers against.
 */
type Raw = { name: string; player: string; day: string };

const DAY_MS = 86_400_000;
const addDays = (day: string, n: number) =>
  new Date(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS).toISOString().slice(0, 10);
const diffDays = (a: string, b: string) =>
  Math.round((Date.parse(`${a}T00:00:00Z`) - Date.parse(`${b}T00:00:00Z`)) / DAY_MS);
/** The Monday of the ISO week of a day. */
export const mondayOf = (day: string) => addDays(day, -((new Date(`${day}T00:00:00Z`).getUTCDay() + 6) % 7));

export function range(from: string, to: string): string[] {
  const days: string[] = [];
  for (let day = from; day <= to; day = addDays(day, 1)) days.push(day);
  return days;
}

export interface RetentionAsked {
  from: string;
  to: string;
  today: string;
  interval?: "day" | "week";
  periods?: number;
  mode?: "n_day" | "unbounded";
  start_name?: string;
  return_name?: string;
}

export function retention(events: readonly Raw[], asked: RetentionAsked) {
  const week = asked.interval === "week";
  const periods = asked.periods ?? (week ? 12 : 30);
  const period = (day: string) => (week ? mondayOf(day) : day);
  const step = week ? 7 : 1;
  const index = (start: string, day: string) => diffDays(period(day), period(start)) / step;
  const starts = new Map<string, string>();
  for (const e of events) {
    if (asked.start_name !== undefined && e.name !== asked.start_name) continue;
    if (!starts.has(e.player) || e.day < starts.get(e.player)!) starts.set(e.player, e.day);
  }
  const cohorts = [];
  for (let p = period(asked.from); p <= asked.to; p = addDays(p, step)) {
    const members = [...starts].filter(([, start]) => period(start) === p).map(([player]) => player);
    const begun = Math.min(periods, index(p, asked.today));
    const returned = Array.from(
      { length: Math.max(0, begun + 1) },
      (_, k) =>
        members.filter((player) =>
          events.some((e) => {
            if (e.player !== player || (asked.return_name !== undefined && e.name !== asked.return_name)) return false;
            const at = index(p, e.day);
            return asked.mode === "unbounded" ? at >= k : at === k;
          }),
        ).length,
    );
    cohorts.push({ date: p < asked.from ? asked.from : p, players: members.length, returned });
  }
  return cohorts;
}

export function active(events: readonly Raw[], from: string, to: string, names?: readonly string[]) {
  const counted = events.filter((e) => !names || names.includes(e.name));
  const first = new Map<string, string>();
  for (const e of counted) if (!first.has(e.player) || e.day < first.get(e.player)!) first.set(e.player, e.day);
  const within = (day: string, width: number) =>
    new Set(counted.filter((e) => e.day <= day && e.day > addDays(day, -width)).map((e) => e.player)).size;
  return range(from, to).map((date) => ({
    date,
    dau: within(date, 1),
    wau: within(date, 7),
    mau: within(date, 30),
    new_players: [...first.values()].filter((day) => day === date).length,
  }));
}

/** Trends by week or month as byName() shapes it: per name, {date, events, players, sum: null} per bucket. */
export function bucketTrends(events: readonly Raw[], from: string, to: string, interval: "week" | "month") {
  const bucket = (day: string) => {
    const start = interval === "week" ? mondayOf(day) : `${day.slice(0, 7)}-01`;
    return start < from ? from : start;
  };
  const dates = [...new Set(range(from, to).map(bucket))];
  const inRange = events.filter((e) => e.day >= from && e.day <= to);
  const series = new Map<string, { date: string; events: number; players: number; sum: number | null }[]>();
  for (const name of [...new Set(inRange.map((e) => e.name))].sort()) {
    series.set(
      name,
      dates.map((date) => {
        const those = inRange.filter((e) => e.name === name && bucket(e.day) === date);
        return { date, events: those.length, players: new Set(those.map((e) => e.player)).size, sum: null };
      }),
    );
  }
  return series;
}
