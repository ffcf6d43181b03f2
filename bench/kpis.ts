import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { isDeepStrictEqual } from "node:util";
import { connectDatabase } from "../src/db/database.js";
import { generate, load } from "./events.js";
import { rawActive, rawBucketPlayers, rawRetention, readRaw } from "./parts/kpis-raw.js";
import { profileStretch } from "./parts/cpu-profile.js";
import { postJson, processCpuMs, round, startBenchService, type BenchService } from "./parts/support.js";

/**
 * `npm run bench -- kpis`: retention, active players and trends by day, week and month on the events bench's
 * data (1,000,000 events, 20,000 players, 30 days, 10 tags; BENCH_EVENTS_PLAYERS makes it smaller), read from a
 * separate process (events-load.ts), each beside the same answer computed from the raw events on the same engine
 * (kpis-raw.ts), which must agree with it; then a tag change on 100 players and the next retention read.
 */
const RUNS = Number(process.env.BENCH_KPIS_RUNS ?? 30);
/** BENCH_KPIS_RAW=0 leaves the raw baselines out (a run to compare CPU only). */
const TAG_ROUNDS = 10;
const RAW = process.env.BENCH_KPIS_RAW !== "0";
/** Raw baselines read every raw event: one run each, past the service's deadline. */
const RAW_DEADLINE_MS = 600_000;

function log(step: string, value?: unknown): void {
  process.stderr.write(`kpis bench: ${step}${value === undefined ? "" : ` ${JSON.stringify(value)}`}\n`);
}

/** The same answer from the raw events: read them all, then count; the time of both. */
async function raw<T>(
  bench: BenchService,
  g: { projectId: string; tags: string[] },
  count: (raw: Awaited<ReturnType<typeof readRaw>>) => T,
) {
  const baseline = await connectDatabase(bench.databaseUri, bench.config.dbName, { timeoutMs: RAW_DEADLINE_MS });
  try {
    const started = performance.now();
    const events = await readRaw(baseline.db, g.projectId, g.tags);
    const answer = count(events);
    return { answer, ms: round(performance.now() - started), read_ms: round(events.ms) };
  } finally {
    await baseline.close();
  }
}

/**
 * The service's CPU per call over `calls` calls made by `run` from the load generator's process: this process's
 * (the service runs in it) and the engine's (its process, from /proc), so a busy machine's waits do not count.
 */
async function serviceCpu<T>(bench: BenchService, calls: number, run: () => Promise<T>) {
  const engineBefore = processCpuMs(bench.databasePid());
  const before = process.cpuUsage();
  const result = await run();
  const used = process.cpuUsage(before);
  const engineAfter = processCpuMs(bench.databasePid());
  const engine = engineBefore === null || engineAfter === null ? null : round((engineAfter - engineBefore) / calls, 2);
  const node = round((used.user + used.system) / 1000 / calls, 2);
  return { result, per_call: { node_cpu_ms_per_call: node, engine_cpu_ms_per_call: engine } };
}

function agree(label: string, service: unknown, baseline: unknown): void {
  if (!isDeepStrictEqual(service, baseline)) throw new Error(`${label}: the raw baseline disagrees with the service`);
}

export default async function kpisBench() {
  const bench = await startBenchService({ DB_TIMEOUT_MS: "10000" });
  try {
    const figures: Record<string, unknown> = {};
    log("generating");
    const g = await generate(bench);
    const range = { from: g.from, to: g.to };
    const split = { split_by: "tags", tags: g.tags };
    const today = new Date().toISOString().slice(0, 10);
    const common = { kind: "query", baseUrl: bench.baseUrl, key: g.privateKey };
    // The project's sets read once (the data was written beside the service), as any first call after a start does.
    await postJson(bench, "/v1/players/search", g.privateKey, { tags: [g.tags[0]], page_size: 1 });
    const timed = async (path: string, body: object) => {
      const first = await load({ ...common, path, body, runs: 1 });
      const cpu = await serviceCpu(bench, RUNS, () => load({ ...common, path, body, runs: RUNS }));
      return { first_read_ms: first.p50_ms, ...cpu.result, ...cpu.per_call };
    };

    const retentionBody = { ...range, periods: 30, ...split };
    figures.retention_30x30_split_10_tags = await timed("/v1/events/retention", retentionBody);
    const retention = await postJson(bench, "/v1/events/retention", g.privateKey, retentionBody);
    if (RAW) {
      const rawRet = await raw(bench, g, (events) => rawRetention(events, g.tags, g.from, g.to, 30, today));
      agree("retention", retention.series, rawRet.answer);
      figures.retention_raw_baseline = { ms: rawRet.ms, read_ms: rawRet.read_ms };
    }
    log("retention", figures.retention_30x30_split_10_tags);

    const activeBody = { ...range, ...split };
    figures.active_30_days_split_10_tags = await timed("/v1/events/active", activeBody);
    const active = await postJson(bench, "/v1/events/active", g.privateKey, activeBody);
    if (RAW) {
      const rawAct = await raw(bench, g, (events) => rawActive(events, g.tags, g.from, g.to));
      agree("active", active.series, rawAct.answer);
      figures.active_raw_baseline = { ms: rawAct.ms, read_ms: rawAct.read_ms };
    }
    log("active", figures.active_30_days_split_10_tags);

    for (const interval of ["day", "week", "month"] as const) {
      const body = { ...range, interval, ...split };
      figures[`trends_by_${interval}_split_10_tags`] = await timed("/v1/events/trends", body);
      log(`trends by ${interval}`, figures[`trends_by_${interval}_split_10_tags`]);
      if (interval === "day" || !RAW) continue;
      const trends = await postJson(bench, "/v1/events/trends", g.privateKey, body);
      const players = new Map<string, number>();
      for (const s of trends.series)
        for (const p of s.points) if (p.players > 0) players.set(`${s.tag}/${s.name}/${p.date}`, p.players);
      const rawTrends = await raw(bench, g, (events) => rawBucketPlayers(events, g.tags, g.from, g.to, interval));
      agree(`trends by ${interval}`, [...players].sort(), [...rawTrends.answer].sort());
      figures[`trends_by_${interval}_raw_baseline`] = { ms: rawTrends.ms, read_ms: rawTrends.read_ms };
    }

    // Where a read's CPU goes: RUNS reads of each, sampled (a run of its own: the sampler costs CPU too),
    // before the tag changes set the worker going.
    for (const [label, route, body] of [
      ["retention", "/v1/events/retention", retentionBody],
      ["active", "/v1/events/active", activeBody],
    ] as const) {
      figures[`${label}_profile`] = await profileStretch({
        file: path.join(os.tmpdir(), `kpis-${label}.cpuprofile`),
        calls: RUNS,
        stretch: () => load({ ...common, path: route, body, runs: RUNS }),
      });
    }

    // A round's CPU is the update's (its sets written before it answers) and the read's.
    const rounds = await serviceCpu(bench, TAG_ROUNDS, () =>
      load({
        kind: "retention-after-tags",
        baseUrl: bench.baseUrl,
        publicKey: g.publicKey,
        privateKey: g.privateKey,
        players: Array.from(
          { length: Math.min(100, Number(process.env.BENCH_EVENTS_PLAYERS ?? 20_000)) },
          (_, i) => `player_${i}`,
        ),
        range: { ...range, periods: 30 },
        rounds: TAG_ROUNDS,
      }),
    );
    figures.tag_change_100_players_then_retention = {
      ...rounds.result,
      round_node_cpu_ms: rounds.per_call.node_cpu_ms_per_call,
      round_engine_cpu_ms: rounds.per_call.engine_cpu_ms_per_call,
    };
    log("tag change", figures.tag_change_100_players_then_retention);

    return { database: bench.database.isFerretDb ? "ferretdb" : "mongodb", runs: RUNS, ...figures };
  } finally {
    await bench.stop();
  }
}
