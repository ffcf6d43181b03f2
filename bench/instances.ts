import { readFileSync } from "node:fs";
import os from "node:os";
import { performance } from "node:perf_hooks";
import { connectDatabase, type Database } from "../src/db/database.js";
import { createLogger } from "../src/log.js";
import { startMongoJavaServer } from "../test/support/db/mongo-java-server.js";
import { startInstance, type InstanceProcess } from "./parts/instances-process.js";
import { BENCH_ADMIN_KEY, processCpuMs, round, runLoadProcess } from "./parts/support.js";

/**
 * `npm run bench -- instances` (issue 47): one, two and three service instances on one database (mongo-java-server,
 * or MONGODB_URI) applying one stream, each instance a process of its own with its worker on: BENCH_INSTANCES_CALLS
 * ingest calls (200) of 500 events over 8 projects, sent round-robin to the instances from a load generator of its
 * own process (instances-load.ts). Per run: the ingest rate, the time from the first call to every queue applied and
 * the total rate it makes, each instance's share of the applied segments (from the queues' owners, sampled), the CPU
 * of each process, and each instance's CPU profile (what bounds it).
 */
const CALLS = Number(process.env.BENCH_INSTANCES_CALLS ?? 200);
const EVENTS = 500;
const PROJECTS = 8;
const PLAYERS = 1000;
const CONCURRENCY = 8;
const SAMPLE_MS = 100;

interface QueueDoc {
  _id: string;
  seq: number;
  applied: number;
  owner: string | null;
}

function log(step: string, value?: unknown): void {
  process.stderr.write(`instances bench: ${step}${value === undefined ? "" : ` ${JSON.stringify(value)}`}\n`);
}

/** The apply worker ids alive (event_workers), once there are `count`. */
async function workersOnceThere(database: Database, count: number): Promise<string[]> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    const ids = (await database.db.collection("event_workers").find({}).toArray()).map((doc) => String(doc._id));
    if (ids.length >= count) return ids;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`fewer than ${count} apply workers registered`);
}

/** Segments applied per worker, from the queues sampled every SAMPLE_MS until `done` says every one is applied. */
async function sampleShares(database: Database, until: Promise<unknown>): Promise<Map<string, number>> {
  const queues = database.db.collection<QueueDoc>("event_queues");
  const last = new Map<string, number>();
  const byWorker = new Map<string, number>();
  const holders = new Map<string, string>();
  let loadDone = false;
  void until.then(() => (loadDone = true));
  for (;;) {
    const docs = await queues.find({}).toArray();
    for (const doc of docs) {
      const delta = doc.applied - (last.get(doc._id) ?? 0);
      last.set(doc._id, doc.applied);
      // A lease given up between two samples: the segments were its last holder's.
      const owner = doc.owner ?? holders.get(doc._id) ?? "none";
      holders.set(doc._id, owner);
      if (delta > 0) byWorker.set(owner, (byWorker.get(owner) ?? 0) + delta);
    }
    if (loadDone && docs.every((doc) => doc.applied >= doc.seq)) return byWorker;
    await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
  }
}

/** The machine's CPU time since boot (/proc/stat, Linux), busy and in all, in clock ticks. */
function machineTicks(): { busy: number; total: number } {
  const [, ...fields] = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/);
  const ticks = fields.map(Number);
  const total = ticks.reduce((a, b) => a + b, 0);
  // idle and iowait (the 4th and 5th fields of proc(5)'s cpu line).
  return { busy: total - ticks[3] - ticks[4], total };
}

async function run(databaseUri: string, serverPid: number | undefined, count: number) {
  const dbName = `bench_instances_${count}`;
  const database = await connectDatabase(databaseUri, dbName, { timeoutMs: 10_000 });
  await database.db.dropDatabase();
  const instances: InstanceProcess[] = [];
  const workers: string[] = [];
  try {
    for (let i = 0; i < count; i++) {
      instances.push(await startInstance(databaseUri, dbName));
      const ids = await workersOnceThere(database, i + 1);
      workers.push(ids.find((id) => !workers.includes(id))!);
    }
    const keys: string[] = [];
    for (let p = 0; p < PROJECTS; p++) {
      const res = await fetch(`${instances[0].baseUrl}/v1/admin/projects`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": BENCH_ADMIN_KEY },
        body: JSON.stringify({ name: `instances ${p}`, game_id: 7_000_000 + count * 100 + p }),
      });
      keys.push(((await res.json()) as { public_key: string }).public_key);
    }
    for (const instance of instances) instance.profileFromNow();
    const cpuBefore = instances.map((instance) => instance.cpuMs());
    const serverBefore = processCpuMs(serverPid);
    const machineBefore = machineTicks();
    const started = performance.now();
    const load = runLoadProcess("bench/parts/instances-load.ts", {
      baseUrls: instances.map((instance) => instance.baseUrl),
      keys,
      calls: CALLS,
      events: EVENTS,
      concurrency: CONCURRENCY,
      players: PLAYERS,
    });
    const shares = await sampleShares(database, load);
    const seconds = (performance.now() - started) / 1000;
    const cpuSeconds = instances.map((instance, i) => round((instance.cpuMs() - cpuBefore[i]) / 1000, 1));
    const serverAfter = processCpuMs(serverPid);
    const machineAfter = machineTicks();
    const segments = [...shares.values()].reduce((a, b) => a + b, 0);
    const figures = {
      ...(await load),
      applied_seconds: round(seconds, 2),
      applied_events_per_sec: Math.round((CALLS * EVENTS) / seconds),
      applied_share_percent: workers.map((id) => round((100 * (shares.get(id) ?? 0)) / segments)),
      instance_cpu_seconds: cpuSeconds,
      // Each instance's CPU over the run's wall time: how near a core of its own it came.
      instance_cpu_percent_of_a_core: cpuSeconds.map((cpu) => Math.round((100 * cpu) / seconds)),
      // Every core's time busy over the run, whoever's (the machine is shared with other work).
      machine_cpu_busy_percent: Math.round(
        (100 * (machineAfter.busy - machineBefore.busy)) / (machineAfter.total - machineBefore.total),
      ),
      database_cpu_seconds:
        serverBefore === null || serverAfter === null ? null : round((serverAfter - serverBefore) / 1000, 1),
    };
    const profiles = [];
    for (const instance of instances.splice(0)) profiles.push(await instance.stop());
    return {
      ...figures,
      profiles: profiles.map(({ by_area_percent, top_functions_percent }) => ({
        by_area_percent: Object.fromEntries(Object.entries(by_area_percent).slice(0, 6)),
        top_functions_percent: Object.fromEntries(Object.entries(top_functions_percent).slice(0, 6)),
      })),
    };
  } finally {
    for (const instance of instances) await instance.stop().catch(() => undefined);
    await database.db.dropDatabase();
    await database.close();
  }
}

export default async function instancesBench() {
  const server = process.env.MONGODB_URI ? undefined : await startMongoJavaServer(createLogger("warn"));
  try {
    const databaseUri = process.env.MONGODB_URI ?? server!.uri;
    const figures: Record<string, unknown> = {
      engine: server ? "mongo-java-server" : "MONGODB_URI",
      // The machine is shared: its load average as the run begins.
      load_average: os.loadavg().map((load) => round(load, 1)),
      stream: { calls: CALLS, events_per_call: EVENTS, projects: PROJECTS },
    };
    for (const count of [1, 2, 3]) {
      figures[`instances_${count}`] = await run(databaseUri, server?.pid, count);
      log(`${count} instances`, figures[`instances_${count}`]);
    }
    return figures;
  } finally {
    await server?.stop();
  }
}
