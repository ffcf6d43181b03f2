import type { TestService } from "./service.js";

/** A day `daysAgo` before the service's today, as "YYYY-MM-DD". */
export function dayAgo(svc: TestService, daysAgo: number): string {
  return new Date(svc.clock.now().getTime() - daysAgo * 86_400_000).toISOString().slice(0, 10);
}

/** Noon UTC of that day: an event time safely inside it. */
export const noonOf = (day: string): string => `${day}T12:00:00Z`;

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

/** Daily {events, players} per name as a brute-force count over raw events: what trends must answer. */
export function bruteForce(
  events: readonly { name: string; player: string; day: string }[],
  days: readonly string[],
): Map<string, { date: string; events: number; players: number }[]> {
  const series = new Map<string, { date: string; events: number; players: number }[]>();
  for (const name of [...new Set(events.map((e) => e.name))].sort()) {
    series.set(
      name,
      days.map((date) => {
        const those = events.filter((e) => e.name === name && e.day === date);
        return { date, events: those.length, players: new Set(those.map((e) => e.player)).size };
      }),
    );
  }
  return series;
}

/** Trends series as a map by name (and tag when split). */
export function byName(body: { series: { name: string; tag?: string; points: unknown[] }[] }) {
  return new Map(body.series.map((s) => [s.tag ? `${s.tag}/${s.name}` : s.name, s.points]));
}
