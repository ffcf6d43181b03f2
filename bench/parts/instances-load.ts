// The load generator of `npm run bench -- instances`, a process of its own so that its CPU is none of the
// instances'. It reads its task from argv[2] (JSON), sends `calls` ingest calls of `events` events each, the i-th to
// instance i mod n and project i mod p, `concurrency` at a time, and prints its figures as JSON.
import { performance } from "node:perf_hooks";
import { round } from "./support.js";

interface Task {
  baseUrls: string[];
  /** Each project's public key. */
  keys: string[];
  calls: number;
  events: number;
  concurrency: number;
  /** Players per project, `player_0` …; events fall on the two days before now. */
  players: number;
}

const NAMES = ["session_start", "match_end", "purchase"];
const DAY_MS = 86_400_000;

const task = JSON.parse(process.argv[2]) as Task;
const now = Date.now();

/** One call's events, each with an event_id of its call. */
function eventsOf(call: number) {
  return Array.from({ length: task.events }, (_, i) => ({
    name: NAMES[i % NAMES.length],
    partner_user_id: `player_${(call * task.events + i) % task.players}`,
    timestamp: new Date(now - 60_000 - ((call + i) % 2) * DAY_MS).toISOString(),
    event_id: `${call}-${i}`,
  }));
}

/** Sends a call until it is accepted (a 429 waits its Retry-After): its latency and the refusals before it. */
async function send(call: number): Promise<{ ms: number; refused: number }> {
  const baseUrl = task.baseUrls[call % task.baseUrls.length];
  const body = JSON.stringify({ events: eventsOf(call) });
  const started = performance.now();
  for (let refused = 0; ; refused++) {
    const res = await fetch(`${baseUrl}/v1/events`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": task.keys[call % task.keys.length] },
      body,
    });
    const answer = (await res.json()) as { accepted?: number };
    if (res.status === 200 && answer.accepted === task.events) return { ms: performance.now() - started, refused };
    if (res.status !== 429) throw new Error(`call ${call}: ${res.status} ${JSON.stringify(answer)}`);
    await new Promise((resolve) => setTimeout(resolve, 1000 * Number(res.headers.get("retry-after") ?? 1)));
  }
}

const started = performance.now();
const latencies: number[] = [];
let refused = 0;
let next = 0;
await Promise.all(
  Array.from({ length: task.concurrency }, async () => {
    while (next < task.calls) {
      const sent = await send(next++);
      latencies.push(sent.ms);
      refused += sent.refused;
    }
  }),
);
const seconds = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
process.stdout.write(
  JSON.stringify({
    events: task.calls * task.events,
    ingest_seconds: round(seconds, 2),
    ingest_events_per_sec: Math.round((task.calls * task.events) / seconds),
    call_p50_ms: round(latencies[Math.floor(latencies.length / 2)]),
    call_p99_ms: round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))]),
    refused_429: refused,
  }) + "\n",
);
