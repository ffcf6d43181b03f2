import type { Clock } from "../clock.js";
import { KeptEvents } from "./kept-events.js";
import type { Database } from "../db/database.js";
import { AsOfNow } from "./reads/as-of-now.js";
import { Backpressure } from "./queue/backpressure.js";
import type { Engine } from "../db/engine.js";
import { CohortRollupStore } from "./rollups/cohort-rollup-store.js";
import { EventIdStore } from "./queue/event-id-store.js";
import { EventNameStore } from "./rollups/event-name-store.js";
import { Events } from "./events.js";
import { PlanStore } from "./rollups/plan-store.js";
import { Resyncs } from "./apply/resyncs.js";
import type { PlayerDirectory } from "./player-directory.js";
import type { ChangedPlayers } from "../players/changed-players.js";
import { PlayerRollupStore } from "./rollups/player-rollup-store.js";
import { QueueLagMeter, QueueStateStore, QueueWriter } from "./queue/queue.js";
import { Retention } from "./apply/retention.js";
import { RetentionWindow } from "./rollup-keys.js";
import { SegmentStore } from "./queue/segment-store.js";
import { TraitCohorts } from "./apply/trait-cohorts.js";
import { EventTraitKeyStore } from "./rollups/event-trait-key-store.js";
import { SummedPropertyStore } from "./rollups/summed-property-store.js";
import { CohortReader } from "./reads/trends.js";
import { PlayerActivity } from "./kpis/player-activity.js";
import type { StepTimer } from "../steps.js";
import { ApplyWorker, type WorkerOptions } from "./apply/worker.js";

export interface EventsCapability {
  events: Events;
  worker: ApplyWorker;
  /** The queue's lag, measured from the database: right whichever instance applies. */
  lag: QueueLagMeter;
  backpressure: Backpressure;
  /** One player's raw events still kept, a bounded batch at a time (players/data). */
  keptEvents: KeptEvents;
  /** Fills the owner's memory of a project's player histories and event names (a start, before it is ready). */
  fillOwnerMemory(projectId: string): Promise<void>;
}

/** The event queue and how player writes reach it: made before the players, whose write path it follows. */
export interface EventQueue {
  queue: QueueStateStore;
  segments: SegmentStore;
  writer: QueueWriter;
  /** The players write path's HistoryFollower. */
  histories: Resyncs;
}

export async function createEventQueue({ database, clock }: { database: Database; clock: Clock }): Promise<EventQueue> {
  const queue = new QueueStateStore(database.db, database.timeoutMs);
  await queue.ensure();
  const segments = new SegmentStore(database.db);
  const writer = new QueueWriter({ queue, segments, clock });
  return { queue, segments, writer, histories: new Resyncs({ writer }) };
}

export interface CreateEventsOptions {
  database: Database;
  engine: Engine;
  clock: Clock;
  eventQueue: EventQueue;
  retentionDays: number;
  /** EVENT_NAME_LIMIT: distinct event names a project may use. */
  nameLimit: number;
  /** EVENT_MAX_LAG_SECONDS: past this lag, ingestion refuses whole calls. */
  maxLagSeconds: number;
  /** EVENT_MAX_QUEUE_EVENTS: with this many events waiting, ingestion refuses whole calls. */
  maxQueueEvents: number;
  /** How long an ingest waits its turn to register names (DB_TIMEOUT_MS). */
  dbTimeoutMs: number;
  /** The players side: profiles, device links, cohort members (players/directory.ts). */
  directory: PlayerDirectory;
  /** The players' changed players: charts correct for them, the worker settles them. */
  changes: ChangedPlayers;
  /** EVENT_SUM_BACKFILL_STEP: (player, day) totals a step of a sum's back-fill gathers. */
  sumBackfillStep: number;
  /** Where the request paths' steps are timed (the service's metrics). */
  steps: StepTimer;
  /** Lease, polling and test hooks of the apply worker. */
  worker?: Pick<WorkerOptions, "leaseMs" | "pollMs" | "gapGraceMs" | "onError">;
}

/** The events capability and its apply worker (not started: the caller decides whether this process applies). */
export async function createEvents(options: CreateEventsOptions): Promise<EventsCapability> {
  const { database, clock, retentionDays } = options;
  const { db } = database;
  const { queue, segments, writer } = options.eventQueue;
  const { changes } = options;
  const eventIds = new EventIdStore(db, options.engine);
  const playerRollups = new PlayerRollupStore(db, options.engine);
  const cohortRollups = new CohortRollupStore(db, options.engine);
  const { directory } = options;
  const traitKeys = new EventTraitKeyStore(db);
  const summed = new SummedPropertyStore(db);
  const traitCohorts = new TraitCohorts({ store: traitKeys, queue });
  const names = new EventNameStore(db, {
    limit: options.nameLimit,
    waitLimitMs: options.dbTimeoutMs,
    soleWriter: options.engine.soleWriter,
  });
  const window = new RetentionWindow(retentionDays);
  const retention = new Retention({ window, queue, segments, eventIds, playerRollups, cohortRollups });
  const worker = new ApplyWorker({
    ...options.worker,
    queue,
    segments,
    plans: new PlanStore(db, options.engine),
    cohortRollups,
    changes,
    resyncs: options.eventQueue.histories,
    playerRollups,
    eventIds,
    directory,
    retention,
    window,
    clock,
    traitKeys,
    traitCohorts,
    writer,
    names,
    summed,
    sumBackfillStep: options.sumBackfillStep,
    steps: options.steps,
  });
  const asOfNow = new AsOfNow({ changes, queue, playerRollups, directory });
  const reader = new CohortReader({ cohortRollups, playerRollups, directory, traitCohorts, asOfNow, names });
  const activity = new PlayerActivity({ asOfNow, playerRollups, directory });
  const lag = new QueueLagMeter(queue, segments, clock);
  const backpressure = new Backpressure({
    lag,
    clock,
    maxLagSeconds: options.maxLagSeconds,
    maxQueueEvents: options.maxQueueEvents,
  });
  const events = new Events({
    writer,
    worker,
    lag,
    reader,
    activity,
    directory,
    traitCohorts,
    window,
    names,
    summed,
    backpressure,
    clock,
    steps: options.steps,
  });
  const fillOwnerMemory = async (projectId: string) => {
    // After a stop that left history changes unwritten, some histories filled here are behind their segments: the
    // worker's catch-up, before the instance is ready, forgets those it writes and fills their projects again.
    await Promise.all([playerRollups.fillMemory(projectId), names.current(projectId)]);
  };
  return { events, worker, lag, backpressure, fillOwnerMemory, keptEvents: new KeptEvents(segments) };
}
