/**
 * The events benchmark's load generator, a process of its own so that its
 * CPU is not the service's. Reads one JSON task from argv and prints one JSON
 * result line.
 */
import { performance } from "node:perf_hooks";

type Task =
  | {
      kind: "ingest";
      baseUrl: string;
      key: string;
      seconds: number;
      concurrency: number;
      batch: number;
      players: number;
      /** Events a second from all callers together, each pacing its calls to its share; absent: as fast as they go. */
      rate?: number;
      /** Stops once this many events are sent, if before `seconds`. */
      events?: number;
    }
  | { kind: "query"; baseUrl: string; key: string; path: string; body: object; runs: number }
  | { kind: "tag-change"; baseUrl: string; publicKey: string; privateKey: string; players: string[]; range: object }
  | {
      kind: "retention-after-tags";
      baseUrl: string;
      publicKey: string;
      privateKey: string;
      players: string[];
      range: object;
      rounds: number;
    };

const task = JSON.parse(process.argv[2]) as Task;

async function post(baseUrl: string, path: string, key: string, body: unknown): Promise<any> {
  const res = await fetch(baseUrl + path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

function percentiles(latencies: number[]) {
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return { p50_ms: Math.round(at(0.5) * 10) / 10, p99_ms: Math.round(at(0.99) * 10) / 10 };
}

async function ingest(t: Extract<Task, { kind: "ingest" }>) {
  const latencies: number[] = [];
  let accepted = 0;
  let calls = 0;
  let sent = 0;
  const end = performance.now() + t.seconds * 1000;
  const started = performance.now();
  const slotMs = t.rate ? ((t.batch * t.concurrency) / t.rate) * 1000 : 0;
  await Promise.all(
    Array.from({ length: t.concurrency }, async (_, caller) => {
      let next = started + (slotMs * caller) / t.concurrency;
      while (performance.now() < end && sent < (t.events ?? Infinity)) {
        sent += t.batch;
        if (slotMs > 0) {
          await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
          next += slotMs;
        }
        const events = Array.from({ length: t.batch }, (_, i) => ({
          name: `event_${i % 8}`,
          partner_user_id: `player_${Math.floor(Math.random() * t.players)}`,
          properties: { level: i % 50, mode: "ranked" },
        }));
        const at = performance.now();
        const body = await post(t.baseUrl, "/v1/events", t.key, { events });
        latencies.push(performance.now() - at);
        accepted += body.accepted;
        calls++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { accepted, calls, seconds, events_per_sec: Math.round(accepted / seconds), ...percentiles(latencies) };
}

async function query(t: Extract<Task, { kind: "query" }>) {
  const latencies: number[] = [];
  let series = 0;
  for (let i = 0; i < t.runs; i++) {
    const at = performance.now();
    const body = await post(t.baseUrl, t.path, t.key, t.body);
    latencies.push(performance.now() - at);
    series = body.series?.length ?? body.names?.length ?? 0;
  }
  return { runs: t.runs, series, ...percentiles(latencies) };
}

/**
 * Adds a new tag to players with 30 active days; times the update call and until the tag's series shows them, and
 * counts the very next reads that show them already (read your writes: all of them).
 */
async function tagChange(t: Extract<Task, { kind: "tag-change" }>) {
  const calls: number[] = [];
  const visible: number[] = [];
  let nextReadShows = 0;
  for (const [i, player] of t.players.entries()) {
    const tag = `moved_${i}`;
    const at = performance.now();
    await post(t.baseUrl, "/v1/players/update", t.publicKey, {
      players: [{ partner_user_id: player, tags_add: [tag] }],
    });
    calls.push(performance.now() - at);
    for (let read = 0; ; read++) {
      const body = await post(t.baseUrl, "/v1/events/trends", t.privateKey, { ...t.range, tags: [tag] });
      if (body.series.length === 0) continue;
      if (read === 0) nextReadShows++;
      break;
    }
    visible.push(performance.now() - at);
  }
  return {
    players: t.players.length,
    update_call: percentiles(calls),
    until_in_series: percentiles(visible),
    next_read_shows_player: `${nextReadShows} of ${t.players.length}`,
  };
}

/**
 * Each round gives a new tag to all `players` in one update, then times the very next retention read split by
 * that tag, and checks that it counts every one of them (they all start inside the range).
 */
async function retentionAfterTags(t: Extract<Task, { kind: "retention-after-tags" }>) {
  const reads: number[] = [];
  let shown = 0;
  for (let round = 0; round < t.rounds; round++) {
    const tag = `kpi_round_${round}`;
    await post(t.baseUrl, "/v1/players/update", t.publicKey, {
      players: t.players.map((player) => ({ partner_user_id: player, tags_add: [tag] })),
    });
    const at = performance.now();
    const body = await post(t.baseUrl, "/v1/events/retention", t.privateKey, {
      ...t.range,
      split_by: "tags",
      tags: [tag],
    });
    reads.push(performance.now() - at);
    const players = body.series[0].cohorts.reduce((sum: number, c: { players: number }) => sum + c.players, 0);
    if (players === t.players.length) shown++;
  }
  return { players: t.players.length, next_read: percentiles(reads), reads_showing_all: `${shown} of ${t.rounds}` };
}

const result =
  task.kind === "ingest"
    ? await ingest(task)
    : task.kind === "query"
      ? await query(task)
      : task.kind === "tag-change"
        ? await tagChange(task)
        : await retentionAfterTags(task);
process.stdout.write(`${JSON.stringify(result)}\n`);
