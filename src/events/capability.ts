import type { Clock } from "../clock.js";
import type { Database } from "../db/database.js";
import type { Engine } from "../db/engine.js";
import type { Sets } from "../sets/capability.js";
import type { StepTimer } from "../steps.js";
import { activityCodec } from "./activity/activity-chunk.js";
import { ActivityStore, monthsCodec, type MonthNames } from "./activity/activity-store.js";
import { RawEventStore } from "./activity/raw-event-store.js";
import { Retention } from "./apply/retention.js";
import { ApplyWorker, type WorkerOptions } from "./apply/worker.js";
import { WorkerRegistry } from "./apply/workers.js";
import { Events } from "./events.js";
import { KeptEvents } from "./kept-events.js";
import type { PlayerActivityChanges, PlayerDirectory } from "./player-directory.js";
import { ExposureMetrics } from "./kpis/exposure-metrics.js";
import { Backpressure } from "./queue/backpressure.js";
import { EventIdStore } from "./queue/event-id-store.js";
import { QueueLagMeter } from "./queue/lag.js";
import { QueueStore } from "./queue/queue-store.js";
import { QueueWriter } from "./queue/queue-writer.js";
import { SegmentStore } from "./queue/segment-store.js";
import { ParkedStore } from "./queue/parked-store.js";
import { ParkedSegments } from "./queue/parked-segments.js";
import { DaySetReader } from "./reads/day-sets.js";
import { RetentionWindow } from "./rollup-keys.js";
import { EventNameStore } from "./rollups/event-name-store.js";
import { SummedPropertyStore } from "./rollups/summed-property-store.js";
import { KeyedLock } from "../db/keyed-lock.js";
import { unavailableOf } from "../db/errors.js";

export interface EventsCapability {
  events: Events;
  worker: ApplyWorker;
  /** The queues' lag, measured from the database: right whichever instance applies. */
  lag: QueueLagMeter;
  backpressure: Backpressure;
  /** One player's raw events still kept (players/data). */
  keptEvents: KeptEvents;
  /** The segments parked, for an admin to list and retry. */
  parked: ParkedSegments;
  /** Experiments' metrics counted from each exposed player's exposure day. */
  exposureMetrics: ExposureMetrics;
}

/**
 * The projects' queues and their apply worker (not started: the caller decides whether this process applies), made
 * before the players, whose folds and erasures the worker carries out before their calls answer.
 */
export interface EventQueue {
  queue: QueueStore;
  segments: SegmentStore;
  writer: QueueWriter;
  worker: ApplyWorker;
  activity: ActivityStore;
  raw: RawEventStore;
  summed: SummedPropertyStore;
  parked: ParkedStore;
  window: RetentionWindow;
  /** The players' PlayerActivityChanges: each queued, then carried out at once (ApplyWorker.carryOut). */
  changes: PlayerActivityChanges;
}

export interface EventQueueOptions {
  database: Database;
  engine: Engine;
  sets: Sets;
  clock: Clock;
  retentionDays: number;
  /** EVENT_ID_WINDOW_DAYS: how long an event_id counts an event once. */
  eventIdWindowDays: number;
  /** EVENT_PARK_AFTER_FAILURES: failures in a row after which a segment is parked. */
  parkAfter: number;
  /** EVENT_SUM_BACKFILL_STEP: raw events a step of a sum's back-fill reads, beyond the day it is in. */
  backfillStepEvents: number;
  /** Where the apply's steps are timed (the service's metrics). */
  steps: StepTimer;
  /** The apply worker's lease, polling and reports. */
  worker?: Pick<WorkerOptions, "leaseMs" | "pollMs" | "onError">;
}

export async function createEventQueue(options: EventQueueOptions): Promise<EventQueue> {
  const { database, engine, sets, clock } = options;
  const { db } = database;
  // A write of the queue's document that found the database gone fails the writes waiting behind it at once: they
  // would not be answered within their deadline either (the ingests of a frozen engine, each a deadline later).
  const queue = new QueueStore(db, new KeyedLock(unavailableOf));
  const segments = new SegmentStore(db);
  const writer = new QueueWriter({ queue, segments, clock });
  const eventIds = new EventIdStore(db, engine, options.eventIdWindowDays);
  const raw = new RawEventStore(db, engine, options.retentionDays);
  await Promise.all([eventIds.createIndexes(), raw.createIndexes()]);
  const months = sets.chunks<MonthNames>("event_activity_days", monthsCodec);
  const activity = new ActivityStore(sets.chunks("event_activity", activityCodec), months, sets.numbers);
  const summed = new SummedPropertyStore(db);
  const parked = new ParkedStore(db);
  const workers = new WorkerRegistry(db);
  await workers.createIndexes(engine.ttlIndexes);
  const window = new RetentionWindow(options.retentionDays);
  const worker = new ApplyWorker({
    ...options.worker,
    queue,
    segments,
    writer,
    numbers: sets.numbers,
    eventIds,
    raw,
    activity,
    summed,
    window,
    clock,
    workers,
    parkAfter: options.parkAfter,
    backfillStepEvents: options.backfillStepEvents,
    parked,
    retention: new Retention({ window, activity, raw, eventIds }),
    steps: options.steps,
  });
  const changes: PlayerActivityChanges = {
    fold: async (projectId, moves) =>
      worker.carryOut(projectId, await writer.enqueue(projectId, { kind: "fold", moves: [...moves] })),
    erase: async (projectId, identityKeys) =>
      worker.carryOut(projectId, await writer.enqueue(projectId, { kind: "erase", identityKeys: [...identityKeys] })),
  };
  return { queue, segments, writer, worker, activity, raw, summed, parked, window, changes };
}

export interface CreateEventsOptions {
  engine: Engine;
  database: Database;
  sets: Sets;
  clock: Clock;
  eventQueue: EventQueue;
  /** EVENT_NAME_LIMIT: distinct event names a project may use. */
  nameLimit: number;
  /** EVENT_MAX_LAG_SECONDS: past this lag, ingestion refuses a project's calls. */
  maxLagSeconds: number;
  /** EVENT_MAX_QUEUE_EVENTS: with this many of its events waiting, ingestion refuses a project's calls. */
  maxQueueEvents: number;
  /** How long an ingest waits its turn to register names (DB_TIMEOUT_MS). */
  dbTimeoutMs: number;
  /** The players side: cohorts as sets, the top tags (players/directory.ts). */
  directory: PlayerDirectory;
  /** Where the request paths' steps are timed (the service's metrics). */
  steps: StepTimer;
}

/** The events capability: ingestion onto the queues, and the reads of the sets the worker writes. */
export function createEvents(options: CreateEventsOptions): EventsCapability {
  const { database, engine, sets, clock } = options;
  const { queue, segments, writer, worker, activity, raw, summed, window } = options.eventQueue;
  const names = new EventNameStore(database.db, {
    limit: options.nameLimit,
    waitLimitMs: options.dbTimeoutMs,
    soleWriter: engine.soleWriter,
  });
  const lag = new QueueLagMeter(queue, segments, clock);
  const backpressure = new Backpressure({
    lag,
    clock,
    maxLagSeconds: options.maxLagSeconds,
    maxQueueEvents: options.maxQueueEvents,
  });
  const reader = new DaySetReader(activity, sets.cache);
  const events = new Events({
    writer,
    worker,
    lag,
    reader,
    directory: options.directory,
    window,
    names,
    summed,
    backpressure,
    clock,
    steps: options.steps,
  });
  const keptEvents = new KeptEvents({ numbers: sets.numbers, activity, raw, queue, segments, window, clock });
  const parked = new ParkedSegments({ parked: options.eventQueue.parked, segments, writer });
  const exposureMetrics = new ExposureMetrics({ reader, summed, clock });
  return { events, worker, lag, backpressure, keptEvents, parked, exposureMetrics };
}
