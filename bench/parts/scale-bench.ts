import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { dayNumber } from "../../src/events/kpis/periods.js";
import { dayOf } from "../../src/events/rollup-keys.js";
import { applyComparison } from "./scale-apply.js";
import { EVENT_NAMES, SUMMED, TAGS, type ScaleShape } from "./scale-model.js";
import { scaleQuestions } from "./scale-questions.js";
import { failureAsText, query, tagCheck, timeReads } from "./scale-reads.js";
import { createBenchProject, runLoadProcess, startBenchService, type BenchService } from "./support.js";

const PLAYERS = Number(process.env.BENCH_SCALE_PLAYERS ?? 1_000_000);
const EVENTS = Number(process.env.BENCH_SCALE_EVENTS ?? 100_000_000);
const DAYS = 120;
const SEED = 46;
/** The project of the apply comparison: this many players (or fewer, in a small run), the same events a player. */
const SMALL_PLAYERS = 20_000;
/** The targets of issue 46 beyond the reads': memory after the run, readiness after a restart. */
const TARGETS = { rssMb: 2048, readySeconds: 10 };

function log(step: string, value?: unknown): void {
  process.stderr.write(`scale bench: ${step}${value === undefined ? "" : ` ${JSON.stringify(value)}`}\n`);
}

/** Resident memory of a process, in MiB (from /proc: Linux). */
function rssMb(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return kb === undefined ? null : Math.round(Number(kb) / 1024);
  } catch {
    return null;
  }
}

/** The service's memory (it runs in this process) and the embedded database's; the machine's load (it is shared). */
const memory = (bench: BenchService) => ({
  service_rss_mb: rssMb(process.pid),
  service_heap_used_mb: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
  database_rss_mb: rssMb(bench.databasePid()),
  load_average_1m: os.loadavg()[0],
});

/** A restart on the same database: until ready, /readyz's answer then, and the memory after. */
async function restart(bench: BenchService) {
  const { ready_seconds } = await bench.restart();
  const readyz = (await fetch(`${bench.baseUrl}/readyz`)).status;
  const met = ready_seconds <= TARGETS.readySeconds && readyz === 200;
  return { ready_seconds, readyz_status: readyz, met, ...memory(bench) };
}

export async function scaleBench() {
  const bench = await startBenchService({ DB_TIMEOUT_MS: "10000" });
  const dir = await mkdtemp(path.join(os.tmpdir(), "platform-scale-"));
  try {
    const figures: Record<string, unknown> = { players: PLAYERS, events: EVENTS, days: DAYS, cores: os.cpus().length };
    const lastDay = dayNumber(dayOf(new Date())) - 1;
    const shape: ScaleShape = { players: PLAYERS, events: EVENTS, days: DAYS, seed: SEED, lastDay };
    const big = await createBenchProject(bench, 9_460_001);
    const small = await createBenchProject(bench, 9_460_002);
    const duckFile = path.join(dir, "events.duckdb");
    const generate = (projectId: string, of: ScaleShape, file?: string) =>
      runLoadProcess("bench/parts/scale-generate.ts", {
        databaseUri: bench.databaseUri,
        dbName: bench.config.dbName,
        projectId,
        shape: of,
        ...(file && { duckFile: file }),
      });
    log("generating", shape);
    figures.generation = await generate(big.projectId, shape, duckFile);
    log("generated", figures.generation);
    const smallPlayers = Math.min(SMALL_PLAYERS, PLAYERS);
    const smallShape = { ...shape, players: smallPlayers, events: Math.round((EVENTS * smallPlayers) / PLAYERS) };
    figures.small_project_generation = await generate(small.projectId, smallShape);
    const memoryLog: Record<string, unknown> = { after_generation: memory(bench) };
    figures.restart_after_generation = await restart(bench);
    log("restarted", figures.restart_after_generation);

    // The reads: the 30 days ending yesterday; filters and searches on tags of a few sizes.
    const context = {
      lastDay,
      rangeDays: 30,
      tags: TAGS,
      names: EVENT_NAMES,
      sum: SUMMED,
      both: ["region_eu", "platform_ios"] as [string, string],
      without: ["guild_member", "whale"] as [string, string],
      searchOne: "creator",
      searchBoth: ["whale", "platform_ios"] as [string, string],
    };
    const runs = Number(process.env.BENCH_SCALE_RUNS ?? 30);
    // DuckDB answers in seconds, not milliseconds: its first run and 4 more.
    const duckRuns = Number(process.env.BENCH_SCALE_DUCK_RUNS ?? 5);
    Object.assign(figures, { runs, duckdb_runs: duckRuns });
    Object.assign(figures, await timeReads(bench, big.privateKey, { context, duckFile, runs, duckRuns, log }));
    memoryLog.after_timed_reads = memory(bench);

    const tagged = { seed: SEED, of: PLAYERS, from: lastDay - DAYS + 1, to: lastDay };
    figures.tag_change_then_next_read = await tagCheck(bench, big, tagged);
    log("tag check", figures.tag_change_then_next_read);
    // The stream's players in the large project are spread over all of it, as a live game's are.
    figures.apply = await applyComparison(bench, [
      { label: "small_project", project: small, players: { seed: SEED, count: smallPlayers, of: smallPlayers } },
      { label: "large_project", project: big, players: { seed: SEED, count: smallPlayers, of: PLAYERS } },
    ]);
    log("apply", figures.apply);
    memoryLog.after_the_run = memory(bench);
    const rss = memoryLog.after_the_run as ReturnType<typeof memory>;
    figures.service_rss_after_run = { mb: rss.service_rss_mb, met: (rss.service_rss_mb ?? Infinity) <= TARGETS.rssMb };
    figures.restart_after_run = await restart(bench);
    const [retention] = scaleQuestions(context);
    figures.first_retention_read_after_restart_ms = await failureAsText(
      async () => (await query(bench, big.privateKey, retention, 1)).p50_ms,
    );
    figures.memory = memoryLog;
    return { database: bench.database.isFerretDb ? "ferretdb" : "mongodb", ...figures };
  } finally {
    await bench.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
