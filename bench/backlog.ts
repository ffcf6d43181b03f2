import { generate, load, tagsOfPlayer } from "./events.js";
import { queueOf, round, runLoadProcess, startBenchService } from "./parts/support.js";

/**
 * `npm run bench -- backlog`: issue 46's backlog. Two projects of the events bench's shape (20,000 players of 50
 * events over 30 days, 10 tags), one busy and one idle. The busy one gets BENCH_BACKLOG_EVENTS (a million) events
 * through the API as fast as 8 callers go, so its apply falls behind; while they wait, each of its 20,000 players has
 * a tag toggled through the public key (100 a call, 8 in flight) beside the private key's trait writes (one call at a
 * time), and one-tag trends and active players are read of both projects in turn (parts/backlog-load.ts). Then the
 * service restarts with the backlog still queued. Targets: the busy project's reads within 2× of the idle one's, none
 * of the private key's writes refused, ready within 10 s of the restart.
 */
const BACKLOG_EVENTS = Number(process.env.BENCH_BACKLOG_EVENTS ?? 1_000_000);
const PLAYERS = Number(process.env.BENCH_EVENTS_PLAYERS ?? 20_000);
const TARGETS = { readsOverIdle: 2, readySeconds: 10 };
/** The tag toggled (about a ninth of the players have it) and one left as it is. */
const TOGGLED = "tag_9";
const KEPT = "tag_0";

function log(step: string, value?: unknown): void {
  process.stderr.write(`backlog bench: ${step}${value === undefined ? "" : ` ${JSON.stringify(value)}`}\n`);
}

export default async function backlogBench() {
  // The queue's limits above the backlog: the bench measures a backlog, not ingestion's refusals.
  const bench = await startBenchService({
    DB_TIMEOUT_MS: "10000",
    EVENT_MAX_QUEUE_EVENTS: String(2 * BACKLOG_EVENTS),
    EVENT_MAX_LAG_SECONDS: "3600",
  });
  try {
    log("generating two projects", { players: PLAYERS });
    const busy = await generate(bench, 9_600_001);
    const idle = await generate(bench, 9_600_002);
    const range = { from: busy.from, to: busy.to };
    const reads = {
      [`trends ${TOGGLED}`]: { path: "/v1/events/trends", body: { ...range, tags: [TOGGLED] } },
      [`trends ${KEPT}`]: { path: "/v1/events/trends", body: { ...range, tags: [KEPT] } },
      [`active ${TOGGLED}`]: { path: "/v1/events/active", body: { ...range, tags: [TOGGLED] } },
      [`active ${KEPT}`]: { path: "/v1/events/active", body: { ...range, tags: [KEPT] } },
    };
    // Both projects read before the backlog (their sets cached), 10 runs each: the same shape answers alike.
    const before: Record<string, unknown> = {};
    for (const [label, { path, body }] of Object.entries(reads)) {
      for (const [project, key] of [
        ["busy", busy.privateKey],
        ["idle", idle.privateKey],
      ]) {
        before[`${label} ${project}`] = await load({
          kind: "query",
          baseUrl: bench.baseUrl,
          key,
          path,
          body,
          runs: 10,
        });
      }
    }
    log("before the backlog", before);

    const ingest = await load({
      kind: "ingest",
      baseUrl: bench.baseUrl,
      key: busy.publicKey,
      seconds: 3_600,
      events: BACKLOG_EVENTS,
      concurrency: 8,
      batch: 1_000,
      players: PLAYERS,
    });
    const atStart = await queueOf(bench);
    log("backlog ingested", { ingest, queue: atStart });
    const during = await runLoadProcess("bench/parts/backlog-load.ts", {
      baseUrl: bench.baseUrl,
      busy,
      idle,
      players: PLAYERS,
      holders: Array.from({ length: PLAYERS }, (_, i) => i).filter((i) => tagsOfPlayer(busy.tags, i).includes(TOGGLED)),
      tag: TOGGLED,
      reads,
    });
    const atEnd = await queueOf(bench);
    log("during the backlog", { during, queue: atEnd });
    const ratios = Object.fromEntries(
      Object.keys(reads).map((label) => [
        label,
        round(during.reads[`${label} busy`].p50_ms / during.reads[`${label} idle`].p50_ms, 2),
      ]),
    );

    const restart = await bench.restart();
    const afterRestart = await queueOf(bench);
    log("restarted", { restart, queue: afterRestart });
    const privateRefused = Object.entries(during.private_writes.statuses as Record<string, number>)
      .filter(([status]) => status !== "200")
      .reduce((sum, [, calls]) => sum + calls, 0);
    return {
      database: bench.database.isFerretDb ? "ferretdb" : "mongodb",
      players: PLAYERS,
      backlog: { ingest, queue_at_start: atStart, queue_at_end: atEnd },
      before_the_backlog: before,
      during_the_backlog: during,
      busy_over_idle_p50: ratios,
      restart: { ...restart, queue_after: afterRestart },
      targets: {
        reads_within_2x_of_idle: Object.values(ratios).every((ratio) => ratio <= TARGETS.readsOverIdle),
        private_writes_refused: privateRefused,
        private_writes_none_refused: privateRefused === 0,
        ready_within_10_s: restart.ready_seconds <= TARGETS.readySeconds,
      },
    };
  } finally {
    await bench.stop();
  }
}
