import { Admin } from "../../admin/admin.js";
import { ApiKeyCache, ApiKeyStore } from "../../admin/api-keys.js";
import { ensureBootstrapAdminKey } from "../../admin/bootstrap.js";
import { EntitlementStore } from "../../admin/entitlement-store.js";
import { ProjectStore } from "../../admin/project-store.js";
import type { Clock } from "../../clock.js";
import type { Config } from "../../config.js";
import {
  createConfig,
  createExperimentStore,
  createExposureCohorts,
  type ConfigCapability,
} from "../../config/capability.js";
import type { Database } from "../../db/database.js";
import { engineOf, type Engine } from "../../db/engine.js";
import { createEventQueue, createEvents, type EventsCapability } from "../../events/capability.js";
import { createLaunch, type Launch } from "../../launch/capability.js";
import type { Logger } from "../../log.js";
import { createCohortSets, createPlayers } from "../../players/capability.js";
import type { Players } from "../../players/players.js";
import { createSets, type Sets } from "../../sets/capability.js";
import type { StepTimer } from "../../steps.js";

/** The domain objects the handlers translate to, built once per start. */
export interface Capabilities {
  admin: Admin;
  apiKeys: ApiKeyCache;
  launch: Launch;
  players: Players;
  events: EventsCapability;
  config: ConfigCapability;
  /** What differs between engines. */
  engine: Engine;
  /** The stored sets' stores and the instance's cache of them (its size is a metric). */
  sets: Sets;
  /** The admin key generated at this start (first start without PLATFORM_ADMIN_KEY), to be shown once. */
  generatedAdminKey: string | undefined;
}

export interface CapabilityOptions {
  config: Config;
  database: Database;
  log: Logger;
  clock: Clock;
  /** Where the request paths' steps are timed: the service's metrics. */
  steps: StepTimer;
}

/**
 * Creates indexes, the bootstrap admin key and the keyring; wires launch
 * verifies into players and the config (which reads the players), and the
 * players' folds and erasures into the events' activity.
 */
export async function createCapabilities({
  config,
  database,
  log,
  clock,
  steps,
}: CapabilityOptions): Promise<Capabilities> {
  const projectStore = new ProjectStore(database.db);
  const apiKeyStore = new ApiKeyStore(database.db);
  const entitlementStore = new EntitlementStore(database.db);
  const engine = engineOf(database);
  await Promise.all([
    projectStore.createIndexes(),
    apiKeyStore.createIndexes(engine.queryIndexes),
    entitlementStore.createIndexes(engine.queryIndexes),
  ]);
  const { generatedKey } = await ensureBootstrapAdminKey(apiKeyStore, config.adminKey, clock.now());
  const apiKeys = new ApiKeyCache({ store: apiKeyStore, ttlMs: config.apiKeyCacheSeconds * 1000, clock });
  const sets = createSets({ database, engine, cacheBytes: config.cacheMb * 2 ** 20 });
  // Events read the players' sets, and the players' folds and erasures reach the events' queues: the queues first.
  const eventQueue = await createEventQueue({
    database,
    engine,
    sets,
    clock,
    retentionDays: config.eventRetentionDays,
    eventIdWindowDays: config.eventIdWindowDays,
    parkAfter: config.eventParkAfterFailures,
    backfillStepEvents: config.eventSumBackfillStep,
    steps,
    worker: { onError: (err) => log.error({ err }, "event apply worker") },
  });
  // The players' sets read the experiments' variants; the experiments' exposures write the players' sets.
  const experimentStore = createExperimentStore(database, engine);
  const cohorts = createCohortSets(sets, experimentStore);
  const experiments = createExposureCohorts({
    database,
    engine,
    store: experimentStore,
    cohorts,
    numbers: sets.numbers,
  });
  const players = await createPlayers({
    database,
    engine,
    sets,
    cohorts,
    clock,
    log,
    activity: eventQueue.changes,
    exposures: experiments.exposures,
    steps,
  });
  const events = createEvents({
    database,
    engine,
    sets,
    clock,
    eventQueue,
    nameLimit: config.eventNameLimit,
    maxLagSeconds: config.eventMaxLagSeconds,
    maxQueueEvents: config.eventMaxQueueEvents,
    dbTimeoutMs: config.dbTimeoutMs,
    directory: players.directory,
    steps,
  });
  const configs = createConfig({
    database,
    engine,
    clock,
    players,
    experiments,
    metrics: events.exposureMetrics,
    steps,
  });
  const launch = await createLaunch({
    config,
    database,
    engine,
    projectStore,
    entitlementStore,
    clock,
    log,
    verifiedLaunches: players,
    answers: configs.evaluation,
  });
  return {
    admin: new Admin({ projectStore, apiKeyStore, entitlementStore, apiKeys, clock }),
    apiKeys,
    launch,
    players,
    events,
    config: configs,
    engine,
    sets,
    generatedAdminKey: generatedKey,
  };
}
