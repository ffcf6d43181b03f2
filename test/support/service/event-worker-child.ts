/**
 * An events apply worker in a process of its own, for tests that kill it.
 * Env: MONGODB_URI, DB_NAME; CRASH_AT=<point>:<n> stops it (prints "crash-point" and hangs, for the parent to
 * SIGKILL) the n-th time it reaches that point.
 */
import { Collection } from "mongodb";
import { systemClock } from "../../../src/clock.js";
import { loadConfig } from "../../../src/config.js";
import { connectDatabase } from "../../../src/db/database.js";
import { engineOf } from "../../../src/db/engine.js";
import { createEventQueue } from "../../../src/events/capability.js";
import { QueueStore } from "../../../src/events/queue/queue-store.js";
import { QueueWriter } from "../../../src/events/queue/queue-writer.js";
import { createSets } from "../../../src/sets/capability.js";

/**
 * Where CRASH_AT may stop the worker: before a write command of raw events or of activity chunks (`event_raw`,
 * `event_activity`: within a batch, some of its writes made), after the cursor moved past a batch (its segments not
 * yet deleted), and after a step of a sum's back-fill queued the next.
 */
type CrashPoint = "event_raw" | "event_activity" | "advanced" | "sum-step-queued";

const [crashPoint, crashAt] = (process.env.CRASH_AT ?? "").split(":");
let reached = 0;
async function point(name: CrashPoint) {
  if (name === crashPoint && ++reached === Number(crashAt)) {
    process.stdout.write("crash-point\n");
    await new Promise(() => undefined);
  }
}
// This process's writes only: the points are marked around the worker's own.
const bulkWrite = Collection.prototype.bulkWrite;
Collection.prototype.bulkWrite = async function (this: Collection, ...args: Parameters<Collection["bulkWrite"]>) {
  if (this.collectionName === "event_raw" || this.collectionName === "event_activity") {
    await point(this.collectionName);
  }
  return bulkWrite.apply(this, args);
} as Collection["bulkWrite"];
const advance = QueueStore.prototype.advance;
QueueStore.prototype.advance = async function (this: QueueStore, ...args: Parameters<QueueStore["advance"]>) {
  const moved = await advance.apply(this, args);
  await point("advanced");
  return moved;
};
const enqueue = QueueWriter.prototype.enqueue;
QueueWriter.prototype.enqueue = async function (this: QueueWriter, ...args: Parameters<QueueWriter["enqueue"]>) {
  const seq = await enqueue.apply(this, args);
  const work = args[1];
  if (work.kind === "sum" && work.after !== undefined) await point("sum-step-queued");
  return seq;
};

const config = loadConfig();
const database = await connectDatabase(process.env.MONGODB_URI!, process.env.DB_NAME!);
const engine = engineOf(database);
const { worker } = await createEventQueue({
  database,
  engine,
  sets: createSets({ database, engine, cacheBytes: config.cacheMb * 2 ** 20 }),
  clock: systemClock,
  retentionDays: config.eventRetentionDays,
  eventIdWindowDays: config.eventIdWindowDays,
  parkAfter: config.eventParkAfterFailures,
  backfillStepEvents: config.eventSumBackfillStep,
  steps: { recordStep: () => undefined },
  // Short, so a restarted worker takes over from the killed one quickly.
  worker: { leaseMs: 500, pollMs: 20, onError: (error) => process.stderr.write(`worker: ${String(error)}\n`) },
});
worker.start();
process.stdout.write("started\n");
