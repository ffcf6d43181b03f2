import os from "node:os";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import {
  createBenchProject,
  postJson,
  round,
  runLoadProcess,
  startBenchService,
  type BenchService,
} from "./parts/support.js";

/**
 * `npm run bench -- soak`: events ingested from a separate process
 * (bench/parts/soak-load.ts, every call retried unchanged until 200) while the
 * embedded engine is frozen twice and killed twice; `/readyz` sampled
 * throughout, then until the queue is drained. Ends with Trends per name and
 * day compared with the load's brute-force count; throws when they differ,
 * the queue is not empty, or a sample showed events waiting with a lag of 0.
 */
const SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 100);
// Above what the worker applies on the 2-core machine (~600/s), so a backlog builds, yet drained in minutes.
const EVENTS_PER_SECOND = Number(process.env.BENCH_SOAK_RATE ?? 1_000);
const NAMES = 5;
const FREEZE_MS = 10_000;
// When each fault starts, as a share of the load's duration (15, 35, 55 and 75 s into 100 s).
const FAULTS = [
  { at: 0.15, kind: "freeze" },
  { at: 0.35, kind: "kill" },
  { at: 0.55, kind: "freeze" },
  { at: 0.75, kind: "kill" },
] as const;
const SAMPLE_MS = 250;
const DRAIN_DEADLINE_MS = 15 * 60_000;

function log(step: string, value?: unknown): void {
  process.stderr.write(`soak bench: ${step}${value === undefined ? "" : ` ${JSON.stringify(value)}`}\n`);
}

type Readyz = { ready: false } | { ready: true; events?: { lag_seconds: number; queue_depth: number } };

/** One /readyz answer; no answer within 5 s counts as not ready, like a 503. */
async function readyz(bench: BenchService): Promise<Readyz> {
  try {
    const res = await fetch(`${bench.baseUrl}/readyz`, { signal: AbortSignal.timeout(5_000) });
    const body = (await res.json()) as any;
    return res.status === 200 ? { ready: true, events: body.events } : { ready: false };
  } catch {
    return { ready: false };
  }
}

async function untilReady(bench: BenchService, notPid?: number): Promise<void> {
  const deadline = performance.now() + 120_000;
  while (bench.databasePid() === notPid || !(await readyz(bench)).ready) {
    if (performance.now() > deadline) throw new Error("the engine did not come back within 120 s");
    await sleep(SAMPLE_MS);
  }
}

/**
 * Samples /readyz every 250 ms until stopped, or until the queue is empty
 * once the load has ended (`drained` resolves to the seconds that took).
 */
function watchReadyz(bench: BenchService, started: number) {
  const figures = {
    samples: 0,
    unavailable: 0,
    /** 200 without `events`: the lag's measurement failed (the engine went away between ping and measure). */
    without_events: 0,
    max_lag_seconds: 0,
    max_queue_depth: 0,
    lag_zero_while_waiting: [] as { at_s: number; queue_depth: number }[],
  };
  let loadEnded: number | undefined;
  let stopped = false;
  const drained = (async () => {
    let lastLog = 0;
    while (!stopped) {
      const at = performance.now();
      const r = await readyz(bench);
      figures.samples++;
      if (!r.ready) figures.unavailable++;
      else if (!r.events) figures.without_events++;
      else {
        const { lag_seconds: lag, queue_depth: depth } = r.events;
        figures.max_lag_seconds = Math.max(figures.max_lag_seconds, lag);
        figures.max_queue_depth = Math.max(figures.max_queue_depth, depth);
        if (depth > 0 && lag === 0)
          figures.lag_zero_while_waiting.push({ at_s: round((at - started) / 1000), queue_depth: depth });
        if (at - lastLog > 10_000) {
          log("readyz", { at_s: Math.round((at - started) / 1000), lag_seconds: round(lag), queue_depth: depth });
          lastLog = at;
        }
        if (loadEnded !== undefined && at > loadEnded && depth === 0) return (performance.now() - loadEnded) / 1000;
      }
      if (loadEnded !== undefined && performance.now() - loadEnded > DRAIN_DEADLINE_MS) {
        throw new Error(`the queue was not drained ${DRAIN_DEADLINE_MS / 60_000} min after the load`);
      }
      await sleep(SAMPLE_MS);
    }
    return Number.NaN;
  })();
  return {
    figures,
    drained,
    loadEnded: () => (loadEnded = performance.now()),
    stop: () => (stopped = true),
  };
}

/** Freezes and kills the engine on FAULTS' schedule; each waits for /readyz to answer 200 again before the next. */
async function injectFaults(bench: BenchService, started: number, frozen: { pid?: number }) {
  const done = [];
  for (const fault of FAULTS) {
    await sleep(Math.max(0, started + fault.at * SECONDS * 1000 - performance.now()));
    const pid = bench.databasePid()!;
    const at = performance.now();
    log(fault.kind, { at_s: Math.round((at - started) / 1000), pid });
    if (fault.kind === "freeze") {
      frozen.pid = pid;
      process.kill(pid, "SIGSTOP");
      await sleep(FREEZE_MS);
      process.kill(pid, "SIGCONT");
      frozen.pid = undefined;
      await untilReady(bench);
    } else {
      process.kill(pid, "SIGKILL");
      await untilReady(bench, pid);
    }
    const seconds = round((performance.now() - at) / 1000);
    done.push({ kind: fault.kind, at_s: Math.round((at - started) / 1000), pid, until_ready_s: seconds });
  }
  return done;
}

type Truth = Record<string, Record<string, { events: number; players: number }>>;

/** Trends per name and day over the truth's days, compared point by point with the brute force. */
async function compare(bench: BenchService, key: string, truth: Truth) {
  const names = Object.keys(truth).sort();
  const days = names.flatMap((name) => Object.keys(truth[name])).sort();
  const body = { from: days[0], to: days.at(-1), names, interval: "day" };
  const answer = await postJson(bench, "/v1/events/trends", key, body);
  const mismatches = [];
  let points = 0;
  for (const name of names) {
    const series = answer.series.find((s: any) => s.name === name);
    if (!series) mismatches.push({ name, trends: "no series" });
    for (const point of series?.points ?? []) {
      points++;
      // Proto3 JSON leaves zero counts out.
      const trends = { events: point.events ?? 0, players: point.players ?? 0 };
      const brute = truth[name][point.date] ?? { events: 0, players: 0 };
      if (trends.events !== brute.events || trends.players !== brute.players) {
        mismatches.push({ name, day: point.date, trends, brute_force: brute });
      }
    }
  }
  return { range: `${body.from}..${body.to}`, points, mismatches, lag_seconds: answer.lag_seconds ?? 0 };
}

export default async function soakBench() {
  // Default deadlines (DB_TIMEOUT_MS 2 s): a frozen engine must turn into 503s, as in production.
  const bench = await startBenchService();
  const frozen: { pid?: number } = {};
  try {
    if (bench.databasePid() === undefined) throw new Error("the soak freezes the embedded engine: unset MONGODB_URI");
    const loadAverageStart = os.loadavg().map((l) => round(l, 2));
    const project = await createBenchProject(bench, 9_300_001);
    const started = performance.now();
    const watch = watchReadyz(bench, started);
    const task = { seconds: SECONDS, callers: 4, batch: 100, players: 2_000, names: NAMES };
    log("load", { ...task, events_per_second: EVENTS_PER_SECOND, load_average: loadAverageStart });
    let load;
    let faults;
    try {
      [load, faults] = await Promise.all([
        runLoadProcess("bench/parts/soak-load.ts", {
          ...task,
          baseUrl: bench.baseUrl,
          key: project.publicKey,
          eventsPerSecond: EVENTS_PER_SECOND,
        }),
        injectFaults(bench, started, frozen),
      ]);
    } catch (error) {
      watch.stop();
      await watch.drained.catch(() => undefined);
      throw error;
    }
    watch.loadEnded();
    log("load ended; draining", { seconds: round((performance.now() - started) / 1000) });
    const drainSeconds = await watch.drained;
    watch.stop();
    const final = await readyz(bench);
    const trends = await compare(bench, project.privateKey, load.truth);
    const result = {
      database: bench.database.isFerretDb ? "ferretdb" : "mongodb",
      load_average: { start: loadAverageStart, end: os.loadavg().map((l) => round(l, 2)) },
      load: { ...task, events_per_second: EVENTS_PER_SECOND },
      events: { sent: load.sent, accepted: load.accepted, rejected: load.rejections },
      calls: { calls: load.calls, retries: load.retries, max_attempts: load.max_attempts, failures: load.failures },
      faults: {
        freezes: faults.filter((f) => f.kind === "freeze").length,
        kills: faults.filter((f) => f.kind === "kill").length,
        each: faults,
      },
      readyz: { ...watch.figures, lag_zero_while_waiting: watch.figures.lag_zero_while_waiting.length },
      lag_zero_samples: watch.figures.lag_zero_while_waiting.slice(0, 10),
      drain_seconds: round(drainSeconds),
      queue_depth_final: final.ready ? final.events?.queue_depth : "unavailable",
      trends: { range: trends.range, points: trends.points, lag_seconds: trends.lag_seconds },
      trends_equal_brute_force: trends.mismatches.length === 0,
      mismatches: trends.mismatches.slice(0, 5),
    };
    const failed = [
      !result.trends_equal_brute_force && `trends differ from brute force at ${trends.mismatches.length} points`,
      result.queue_depth_final !== 0 && `final queue_depth ${result.queue_depth_final}`,
      result.readyz.lag_zero_while_waiting > 0 &&
        `lag 0 while events waited in ${result.readyz.lag_zero_while_waiting} samples`,
    ].filter(Boolean);
    if (failed.length > 0) {
      log("result", result);
      throw new Error(`soak failed: ${failed.join("; ")}`);
    }
    return result;
  } finally {
    // A bench that failed mid-freeze must not leave the engine stopped (its stop would wait forever).
    if (frozen.pid !== undefined) process.kill(frozen.pid, "SIGCONT");
    await bench.stop();
  }
}
