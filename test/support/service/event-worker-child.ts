/**
 * An events apply worker in a process of its own, for tests that kill it.
 * Env: MONGODB_URI, DB_NAME, EVENT_SUM_BACKFILL_STEP (as the service's); CRASH_AT=<step>:<n> stops it (prints
 * "crash-point" and hangs, for the parent to SIGKILL) at the n-th time it
 * reaches that step of an apply.
 */
import { systemClock } from "../../../src/clock.js";
import { loadConfig } from "../../../src/config.js";
import { connectDatabase } from "../../../src/db/database.js";
import { engineOf } from "../../../src/db/engine.js";
import { createEventQueue, createEvents } from "../../../src/events/capability.js";
import { Players } from "../../../src/players/players.js";
import { createPlayerStores } from "../../../src/players/storage/stores.js";
import { CohortRollupStore } from "../../../src/events/rollups/cohort-rollup-store.js";
import { PlayerRollupStore } from "../../../src/events/rollups/player-rollup-store.js";
import { QueueWriter } from "../../../src/events/queue/queue.js";

/**
 * The steps of an apply, around its two rollup writes (the worker's only ones), and after it queued the next step
 * of a sum's back-fill: where CRASH_AT may stop it.
 */
type ApplyStep = "planned" | "players-written" | "cohorts-written" | "sum-step-queued";

const [crashStep, crashAt] = (process.env.CRASH_AT ?? "").split(":");
let reached = 0;
async function step(seq: number, step: ApplyStep) {
  if (process.env.TRACE_STEPS) process.stderr.write(`${new Date().toISOString()} ${seq} ${step}\n`);
  if (step === crashStep && ++reached === Number(crashAt)) {
    process.stdout.write("crash-point\n");
    await new Promise(() => undefined);
  }
}
// This process's stores only: the steps are marked around the worker's rollup writes.
const absorbPlayers = PlayerRollupStore.prototype.absorb;
PlayerRollupStore.prototype.absorb = async function (this: PlayerRollupStore, seq, changes, options) {
  await step(seq, "planned");
  await absorbPlayers.call(this, seq, changes, options);
  await step(seq, "players-written");
};
const absorbCohorts = CohortRollupStore.prototype.absorb;
CohortRollupStore.prototype.absorb = async function (this: CohortRollupStore, seq, changes, options) {
  await absorbCohorts.call(this, seq, changes, options);
  await step(seq, "cohorts-written");
};
const enqueue = QueueWriter.prototype.enqueue;
QueueWriter.prototype.enqueue = async function (this: QueueWriter, projectId, work, ...rest) {
  const seq = await enqueue.call(this, projectId, work, ...rest);
  if (work.kind === "sum" && work.after !== undefined) await step(seq, "sum-step-queued");
  return seq;
};
const database = await connectDatabase(process.env.MONGODB_URI!, process.env.DB_NAME!);
// The worker's process owns what it remembers: a budget like the service's.
const engine = engineOf(database, 256 * 2 ** 20);
const players = new Players({ stores: createPlayerStores(database.db, engineOf(database, 0)), clock: systemClock });
const { worker } = await createEvents({
  database,
  engine,
  clock: systemClock,
  eventQueue: await createEventQueue({ database, clock: systemClock }),
  retentionDays: 400,
  nameLimit: 1000,
  maxLagSeconds: 300,
  maxQueueEvents: 1_000_000,
  sumBackfillStep: loadConfig().eventSumBackfillStep,
  dbTimeoutMs: 2000,
  directory: players.directory,
  changes: players.changes,
  steps: { recordStep: () => undefined },
  worker: {
    // Short, so a restarted worker takes over from the killed one quickly.
    leaseMs: 500,

    pollMs: 20,
    onError: (error) => process.stderr.write(`worker: ${String(error)}\n`),
  },
});
worker.start();
process.stdout.write("started\n");
