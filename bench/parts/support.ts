import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import type { Clock } from "../../src/clock.js";
import { loadConfig, type Config } from "../../src/config.js";
import { connectDatabase, type Database } from "../../src/db/database.js";
import { startEmbeddedDb } from "../../src/db/embedded.js";
import { createLogger } from "../../src/log.js";
import { startService, type RunningService } from "../../src/server/service.js";

export const BENCH_ADMIN_KEY = "adm_bench_" + "b".repeat(32);

export interface BenchService {
  baseUrl: string;
  service: RunningService;
  config: Config;
  database: Database;
  /** The database's connection string, for a client of the benchmark's own. */
  databaseUri: string;
  /** The embedded database's process, to read its CPU time (undefined with MONGODB_URI). */
  databasePid(): number | undefined;
  adminKey: string;
  /**
   * Stops the service and starts it again on the same database (the engine keeps running), as a deploy restarts
   * it: resolves once the new one is ready, with how long that took and the new service's base URL in `baseUrl`.
   */
  restart(): Promise<{ ready_seconds: number }>;
  stop(): Promise<void>;
}

/**
 * The real service on a free loopback port, with MONGODB_URI when set or else
 * the embedded database in a temporary folder, as `npm start` would run it.
 */
export async function startBenchService(
  env: Record<string, string> = {},
  { clock }: { clock?: Clock } = {},
): Promise<BenchService> {
  const log = createLogger("warn");
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "platform-bench-"));
  const embedded = process.env.MONGODB_URI
    ? undefined
    : await startEmbeddedDb({
        kind: "auto",
        dataDir,
        mongodBinary: process.env.MONGOD_BINARY,
        buildCacheDir: loadConfig().buildCacheDir,
        log,
      });
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    DB_NAME: "bench",
    PLATFORM_ADMIN_KEY: BENCH_ADMIN_KEY,
    LOG_LEVEL: "warn",
    // Benchmarks drive one key far past the production default on purpose.
    RATE_LIMIT_PER_SECOND: "0",
    ...env,
  });
  const databaseUri = process.env.MONGODB_URI ?? embedded!.uri;
  const database = await connectDatabase(databaseUri, config.dbName, { timeoutMs: config.dbTimeoutMs });
  await database.db.dropDatabase();
  const bench: BenchService = {
    baseUrl: "",
    service: await startService({ config, database, log, clock }),
    config,
    database,
    databaseUri,
    databasePid: () => embedded?.pid,
    adminKey: BENCH_ADMIN_KEY,
    async restart() {
      await bench.service.close();
      const started = performance.now();
      bench.service = await startService({ config, database, log, clock });
      bench.baseUrl = `http://127.0.0.1:${bench.service.port}`;
      return { ready_seconds: round((performance.now() - started) / 1000, 2) };
    },
    async stop() {
      await bench.service.close(1_000);
      await database.close();
      await embedded?.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  bench.baseUrl = `http://127.0.0.1:${bench.service.port}`;
  return bench;
}

export interface Measurement {
  ops_per_sec: number;
  p50_ms: number;
  p99_ms: number;
  /**
   * CPU time of this Node process per operation. The benchmark client and the service share the process, so on
   * a small machine this, not the database, is often what bounds throughput.
   */
  node_cpu_ms_per_op: number;
}

/** Runs `run(i)` for i in [0, total) with `concurrency` calls in flight and reports throughput and latency percentiles. */
export async function measure(options: {
  concurrency: number;
  total: number;
  run: (i: number) => Promise<void>;
}): Promise<Measurement> {
  const { concurrency, total, run } = options;
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, total) }, async () => {
      while (next < total) {
        const i = next++;
        const t = performance.now();
        await run(i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return {
    ops_per_sec: round(total / seconds),
    p50_ms: round(at(0.5), 3),
    p99_ms: round(at(0.99), 3),
    node_cpu_ms_per_op: round((cpu.user + cpu.system) / 1000 / total, 3),
  };
}

export function round(value: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** POSTs `body` as JSON to a /v1 path with `key`; the answer's body, or an error naming the path and status. */
export async function postJson(bench: BenchService, path: string, key: string, body: unknown): Promise<any> {
  const res = await fetch(bench.baseUrl + path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** The event queue as /readyz reports it; NaN when it answers without (a deadline missed under load). */
export async function queueOf(bench: BenchService): Promise<{ lag_seconds: number; queue_depth: number }> {
  const body = (await (await fetch(`${bench.baseUrl}/readyz`)).json()) as any;
  return body.events ?? { lag_seconds: Number.NaN, queue_depth: Number.NaN };
}

/** A project of the game `gameId`, created by the admin API, with its keys. */
export async function createBenchProject(bench: BenchService, gameId: number) {
  const body = await postJson(bench, "/v1/admin/projects", bench.adminKey, {
    name: `bench ${gameId}`,
    game_id: gameId,
  });
  return { projectId: body.project.project_id as string, privateKey: body.private_key, publicKey: body.public_key };
}

/** Runs a load generator (`file`, given `task` as JSON in argv) in a process of its own: its one JSON line of result. */
export async function runLoadProcess(file: string, task: object): Promise<any> {
  const child = spawn(process.execPath, ["--import", "tsx", file, JSON.stringify(task)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const [code] = (await once(child, "exit")) as [number];
  if (code !== 0) throw new Error(`load generator ${file} exited with ${code}`);
  return JSON.parse(out);
}

/** User plus system CPU time of a process from /proc (Linux), or null where it cannot be read. */
export function processCpuMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime (fields 14 and 15 of proc(5)), in clock ticks of 10 ms.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}
