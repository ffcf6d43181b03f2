/**
 * The soak benchmark's load generator, a process of its own (so the engine's
 * faults reach it only through the service). Reads one JSON task from argv,
 * sends events for `seconds`, and retries every call unchanged until it is
 * answered 200; then prints one JSON line: the call figures and the brute-force
 * truth, per event name and UTC day the events accepted and their distinct players.
 */
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";

interface Task {
  baseUrl: string;
  key: string;
  seconds: number;
  callers: number;
  batch: number;
  players: number;
  names: number;
  /** All callers together; each paces its calls to its share. */
  eventsPerSecond: number;
}

const task = JSON.parse(process.argv[2]) as Task;
const DAY_MS = 86_400_000;
// A call is abandoned (and sent again) after this long: a frozen engine must not hold a caller forever.
const CALL_TIMEOUT_MS = 30_000;
// One call retried for this long means the service is not coming back: fail rather than hang the bench.
const GIVE_UP_MS = 600_000;
// Prefixes every event_id, so two runs on one database never share one.
const RUN = Date.now().toString(36);

/** Per "name day": events accepted and their distinct players. */
const truth = new Map<string, { events: number; players: Set<string> }>();
/** Every answer that was not 200, by status ("network" and "timeout" for no answer). */
const failures: Record<string, number> = {};
const rejections: Record<string, number> = {};
const figures = { calls: 0, retries: 0, sent: 0, accepted: 0, max_attempts: 1 };

/** One call's events: ids unique to the call and the event, times spread over the last two days. */
function makeCall(caller: number, call: number) {
  const now = Date.now();
  return Array.from({ length: task.batch }, (_, i) => ({
    name: `soak_${Math.floor(Math.random() * task.names)}`,
    partner_user_id: `player_${Math.floor(Math.random() * task.players)}`,
    // Never in the future: the service refuses more than 5 minutes ahead, and a day's truth must not move.
    timestamp: new Date(now - Math.floor(Math.random() * 2 * DAY_MS)).toISOString(),
    event_id: `${RUN}-${caller}-${call}-${i}`,
    properties: { caller, level: i % 50 },
  }));
}
function count(status: string) {
  failures[status] = (failures[status] ?? 0) + 1;
}

/** Sends `events` until a 200; returns its body. Waits Retry-After on 429, half a second on anything else. */
async function send(events: object[]): Promise<any> {
  const first = performance.now();
  for (let attempt = 1; ; attempt++) {
    let waitMs = 500;
    try {
      const res = await fetch(`${task.baseUrl}/v1/events`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": task.key },
        body: JSON.stringify({ events }),
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      });
      const text = await res.text();
      if (res.status === 200) {
        figures.max_attempts = Math.max(figures.max_attempts, attempt);
        return JSON.parse(text);
      }
      count(String(res.status));
      if (res.status === 429) waitMs = Number(res.headers.get("retry-after") ?? 1) * 1000;
      // 503 and 429 are the documented answers while the engine is away or behind; anything else is worth seeing.
      else if (res.status !== 503) process.stderr.write(`soak load: ${res.status} ${text.slice(0, 200)}\n`);
    } catch (error) {
      count((error as Error).name === "TimeoutError" ? "timeout" : "network");
    }
    if (performance.now() - first > GIVE_UP_MS) throw new Error(`a call was refused for ${GIVE_UP_MS / 1000} s`);
    figures.retries++;
    await sleep(waitMs);
  }
}

async function caller(index: number, end: number) {
  const intervalMs = (task.batch / (task.eventsPerSecond / task.callers)) * 1000;
  for (let call = 0; performance.now() < end; call++) {
    const started = performance.now();
    const events = makeCall(index, call);
    figures.sent += events.length;
    const body = await send(events);
    figures.calls++;
    figures.accepted += body.accepted;
    const rejected = new Set<number>();
    for (const r of body.rejected ?? []) {
      rejected.add(r.index ?? 0);
      rejections[r.code] = (rejections[r.code] ?? 0) + 1;
    }
    events.forEach((e, i) => {
      if (rejected.has(i)) return;
      const key = `${e.name} ${e.timestamp.slice(0, 10)}`;
      const slot = truth.get(key) ?? { events: 0, players: new Set<string>() };
      truth.set(key, slot);
      slot.events++;
      slot.players.add(e.partner_user_id);
    });
    // No catching up after an outage: a burst would measure the backlog, not the soak.
    await sleep(Math.max(0, intervalMs - (performance.now() - started)));
  }
}

const started = performance.now();
const end = started + task.seconds * 1000;
const progress = setInterval(
  () => process.stderr.write(`soak load: ${JSON.stringify({ ...figures, failures })}\n`),
  10_000,
);
await Promise.all(Array.from({ length: task.callers }, (_, i) => caller(i, end)));
clearInterval(progress);
const byName: Record<string, Record<string, { events: number; players: number }>> = {};
for (const [key, { events, players }] of truth) {
  const [name, day] = key.split(" ");
  (byName[name] ??= {})[day] = { events, players: players.size };
}
const seconds = (performance.now() - started) / 1000;
process.stdout.write(
  `${JSON.stringify({ ...figures, seconds: Math.round(seconds), failures, rejections, truth: byName })}\n`,
);
