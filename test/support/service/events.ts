import type { TestService } from "./service.js";

const DAY_MS = 86_400_000;
/** How far before "now" an event time lies: well past, yet never ahead of the server however the call is timed. */
const SAFELY_PAST_MS = 60_000;

/** An event time and the UTC day it falls on, derived from it (never from "today", which may end mid-test). */
export interface EventTime {
  timestamp: string;
  day: string;
}

/**
 * Event times on `count` consecutive UTC days, oldest first, the last a minute before the service's now:
 * the i-th lies exactly (count - 1 - i) days before that, so the days are distinct at any hour.
 */
export function eventTimes(svc: TestService, count: number): EventTime[] {
  const last = svc.clock.now().getTime() - SAFELY_PAST_MS;
  return Array.from({ length: count }, (_, i) => {
    const timestamp = new Date(last - (count - 1 - i) * DAY_MS).toISOString();
    return { timestamp, day: timestamp.slice(0, 10) };
  });
}

/** Polls `read` until `done` holds of its answer; fails with the last answer after `timeoutMs`. */
export async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await read();
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setImmediate(resolve));
    last = await read();
  }
  return last;
}

/** The queue depth and lag /readyz reports. */
export async function queueOf(svc: TestService): Promise<{ lag_seconds: number; queue_depth: number }> {
  const res = await fetch(`${svc.baseUrl}/readyz`);
  const body = (await res.json()) as { events?: { lag_seconds: number; queue_depth: number } };
  // A busy database can make /readyz answer 503 for a moment: that is no depth.
  return body.events ?? { lag_seconds: -1, queue_depth: -1 };
}

/** A trends point; `sum` is null (unset) unless the read asked for a sum of the series' name. */
export interface Point {
  date: string;
  events: number;
  players: number;
  sum: number | null;
}

/** Daily {events, players} per name as a brute-force count over raw events: what trends must answer. */
export function bruteForce(
  events: readonly { name: string; player: string; day: string }[],
  days: readonly string[],
): Map<string, Point[]> {
  const series = new Map<string, Point[]>();
  for (const name of [...new Set(events.map((e) => e.name))].sort()) {
    series.set(
      name,
      days.map((date) => {
        const those = events.filter((e) => e.name === name && e.day === date);
        return { date, events: those.length, players: new Set(those.map((e) => e.player)).size, sum: null };
      }),
    );
  }
  return series;
}

/** Trends series as a map by name (and tag when split). */
export function byName(body: { series: { name: string; tag?: string; points: unknown[] }[] }) {
  return new Map(body.series.map((s) => [s.tag ? `${s.tag}/${s.name}` : s.name, s.points]));
}

/**
 * Makes every apply of the project's events that numbers a new player fail, before any of their writes, until the
 * repair this answers (which puts the counter back): the project's counter of player numbers is not a number, so
 * numbering a new player fails (reads see no player yet).
 */
export async function breakProject(svc: TestService, projectId: string): Promise<() => Promise<void>> {
  const counters = svc.database.db.collection<{ _id: string; next: unknown }>("player_number_counters");
  const before = await counters.findOne({ _id: projectId });
  // A counter in use keeps its number as text: reads of the project's count still see it, a reservation fails.
  await counters.replaceOne(
    { _id: projectId },
    { next: before ? String(before.next) : "not a number" },
    { upsert: true },
  );
  return async () => {
    if (before) await counters.replaceOne({ _id: projectId }, { next: before.next });
    else await counters.deleteOne({ _id: projectId });
  };
}
