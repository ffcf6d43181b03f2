import { performance } from "node:perf_hooks";
import type { CommandStartedEvent } from "mongodb";
import { dayOf } from "../src/events/rollup-keys.js";
import { load } from "./events.js";
import {
  createBenchProject,
  measure,
  postJson,
  processCpuMs,
  queueOf,
  round,
  startBenchService,
  type BenchService,
} from "./parts/support.js";

/**
 * `npm run bench -- reads`: the service's CPU per call of the studio's reads: search, trends and the tag list. A
 * project of PLAYERS players (a 10,000-member tag, ten of 2,000, a trait) with EVENTS_PER_PLAYER events each over
 * DAYS days, written through the API only, so the same file runs against any version of the service; then each
 * read RUNS times in a row from a separate process (events-load.ts), the service's node CPU and the engine's
 * measured around it. The service's idle CPU (the worker's passes) is measured alone and taken out.
 */
/** BENCH_READS_PLAYERS: a multiple of 100 (20,000 by default). */
const PLAYERS = Number(process.env.BENCH_READS_PLAYERS ?? 20_000);
const DAYS = 30;
const EVENTS_PER_PLAYER = 10;
const RUNS = 500;
const IDLE_SECONDS = 10;

function log(step: string): void {
  process.stderr.write(`reads bench: ${step}\n`);
}

/** Every player's tags and trait (100 a call), then their events (1,000 a call), applied before it returns. */
async function populate(bench: BenchService, publicKey: string): Promise<void> {
  const updates = async (call: number) => {
    const players = Array.from({ length: 100 }, (_, k) => {
      const i = call * 100 + k;
      const tags = [`level_${i % 10}`, ...(i % 2 === 0 ? ["whale"] : [])];
      return { partner_user_id: `player_${i}`, tags_add: tags, traits: { region: ["eu", "us", "asia"][i % 3] } };
    });
    await postJson(bench, "/v1/players/update", publicKey, { players });
  };
  await measure({ concurrency: 4, total: PLAYERS / 100, run: updates });
  const now = Date.now();
  const events = async (call: number) => {
    const batch = Array.from({ length: 1000 }, (_, k) => {
      const i = call * 1000 + k;
      const day = (i * 7) % DAYS;
      const timestamp = `${dayOf(new Date(now - (DAYS - day) * 86_400_000))}T12:00:00Z`;
      return { name: ["login", "match_end"][i % 2], partner_user_id: `player_${i % PLAYERS}`, timestamp };
    });
    const body = await postJson(bench, "/v1/events", publicKey, { events: batch });
    if (body.accepted !== batch.length) throw new Error(`accepted ${body.accepted} of ${batch.length}`);
  };
  await measure({ concurrency: 4, total: (PLAYERS * EVENTS_PER_PLAYER) / 1000, run: events });
  while ((await queueOf(bench)).queue_depth !== 0) await new Promise((resolve) => setTimeout(resolve, 200));
}

/** CPU of the service's process (this one: the load runs in its own) and of the engine over `run`. */
async function cpuOver(bench: BenchService, run: () => Promise<unknown>) {
  const node = process.cpuUsage();
  const engine = processCpuMs(bench.databasePid());
  const started = performance.now();
  const result = await run();
  const used = process.cpuUsage(node);
  const engineAfter = processCpuMs(bench.databasePid());
  return {
    result,
    seconds: (performance.now() - started) / 1000,
    nodeMs: (used.user + used.system) / 1000,
    engineMs: engine === null || engineAfter === null ? null : engineAfter - engine,
  };
}

const pause = (seconds: number) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

/**
 * Seconds until what follows the writes is done (the worker's applies): two 2 s windows in a row in which the service
 * sent the database nothing but the idle worker's look at the queues and its heartbeat.
 */
async function quiet(bench: BenchService): Promise<number> {
  const started = performance.now();
  let commands = 0;
  const count = (event: CommandStartedEvent) => {
    if (!["event_queues", "event_workers"].includes(event.command[event.commandName])) commands += 1;
  };
  bench.database.client.on("commandStarted", count);
  try {
    for (let quietWindows = 0; quietWindows < 2;) {
      commands = 0;
      await pause(2);
      quietWindows = commands === 0 ? quietWindows + 1 : 0;
    }
  } finally {
    bench.database.client.off("commandStarted", count);
  }
  return round((performance.now() - started) / 1000);
}

export default async function readsBench() {
  const bench = await startBenchService();
  try {
    const { privateKey, publicKey } = await createBenchProject(bench, 9_700_001);
    log(`${PLAYERS} players, ${PLAYERS * EVENTS_PER_PLAYER} events`);
    const populated = await cpuOver(bench, () => populate(bench, publicKey));
    const now = Date.now();
    const range = { from: dayOf(new Date(now - DAYS * 86_400_000)), to: dayOf(new Date(now - 86_400_000)) };
    const levels = Array.from({ length: 10 }, (_, i) => `level_${i}`);
    const reads: Record<string, { path: string; body: object }> = {
      search_one_tag: { path: "/v1/players/search", body: { tags: ["whale"], page: 1 } },
      search_tag_and_trait: {
        path: "/v1/players/search",
        body: { tags: ["level_3"], traits: { region: "eu" }, page: 1 },
      },
      trends_filtered_by_tag: { path: "/v1/events/trends", body: { ...range, tags: ["whale"] } },
      trends_split_by_10_tags: { path: "/v1/events/trends", body: { ...range, tags: levels, split_by: "tags" } },
      tag_list: { path: "/v1/players/tags", body: { page: 1, page_size: 100 } },
    };
    // Each read once first: a project's first read after its writes fills the instance's cache of its sets.
    for (const { path, body } of Object.values(reads)) await postJson(bench, path, privateKey, body);

    log("until the writes behind are done");
    const quietAfter = await quiet(bench);
    log(`idle for ${IDLE_SECONDS} s`);
    const idle = await cpuOver(bench, () => pause(IDLE_SECONDS));
    const idleNodeMsPerSecond = idle.nodeMs / idle.seconds;
    const idleEngineMsPerSecond = idle.engineMs === null ? null : idle.engineMs / idle.seconds;
    const figures: Record<string, object> = {};
    for (const [name, { path, body }] of Object.entries(reads)) {
      log(name);
      const measured = await cpuOver(bench, () =>
        load({ kind: "query", baseUrl: bench.baseUrl, key: privateKey, path, body, runs: RUNS }),
      );
      const { p50_ms, p99_ms } = measured.result as { p50_ms: number; p99_ms: number };
      const net = (ms: number, idlePerSecond: number) => round((ms - idlePerSecond * measured.seconds) / RUNS, 3);
      figures[name] = {
        p50_ms,
        p99_ms,
        node_cpu_ms_per_call: net(measured.nodeMs, idleNodeMsPerSecond),
        engine_cpu_ms_per_call:
          measured.engineMs === null || idleEngineMsPerSecond === null
            ? null
            : net(measured.engineMs, idleEngineMsPerSecond),
      };
    }
    return {
      players: PLAYERS,
      events: PLAYERS * EVENTS_PER_PLAYER,
      runs_per_read: RUNS,
      populated_seconds: round(populated.seconds),
      quiet_after_seconds: quietAfter,
      idle_cpu_ms_per_second: {
        node: round(idleNodeMsPerSecond, 2),
        engine: idleEngineMsPerSecond && round(idleEngineMsPerSecond, 2),
      },
      reads: figures,
    };
  } finally {
    await bench.stop();
  }
}
