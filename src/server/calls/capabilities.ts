import { Admin } from "../../admin/admin.js";
import { ApiKeyCache, ApiKeyStore } from "../../admin/api-keys.js";
import { ensureBootstrapAdminKey } from "../../admin/bootstrap.js";
import { EntitlementStore } from "../../admin/entitlement-store.js";
import { ProjectStore } from "../../admin/project-store.js";
import type { Clock } from "../../clock.js";
import type { Config } from "../../config.js";
import { createConfig, type ConfigCapability } from "../../config/capability.js";
import type { Database } from "../../db/database.js";
import { engineOf, type Engine } from "../../db/engine.js";
import { createEventQueue, createEvents, type EventsCapability } from "../../events/capability.js";
import { createLaunch, type Launch } from "../../launch/capability.js";
import type { Logger } from "../../log.js";
import { createPlayers } from "../../players/capability.js";
import type { Players } from "../../players/players.js";
import type { OwnerMemoryParts } from "../../db/owner-memory-fill.js";
import type { StepTimer } from "../../steps.js";

/** The domain objects the handlers translate to, built once per start. */
export interface Capabilities {
  admin: Admin;
  apiKeys: ApiKeyCache;
  launch: Launch;
  players: Players;
  events: EventsCapability;
  config: ConfigCapability;
  /** What differs between engines, and the owner's memory (its size is a metric). */
  engine: Engine;
  /** The admin key generated at this start (first start without PLATFORM_ADMIN_KEY), to be shown once. */
  generatedAdminKey: string | undefined;
  /** What the owner keeps in memory, filled at start before it is ready; null without the owner's memory (MongoDB). */
  ownerMemory: OwnerMemoryParts | null;
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
 * verifies into players and the config (which reads the players), and every
 * players write into the events rollups.
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
  await Promise.all([projectStore.createIndexes(), apiKeyStore.createIndexes(), entitlementStore.createIndexes()]);
  const { generatedKey } = await ensureBootstrapAdminKey(apiKeyStore, config.adminKey, clock.now());
  const apiKeys = new ApiKeyCache({ store: apiKeyStore, ttlMs: config.apiKeyCacheSeconds * 1000, clock });
  const engine = engineOf(database, config.ownerMemoryMb * 2 ** 20);
  // Events read the players (their directory), and the players' writes queue history moves: the queue comes first.
  const eventQueue = await createEventQueue({ database, clock });
  const players = await createPlayers({
    database,
    engine,
    clock,
    log,
    histories: eventQueue.histories,
    maxChangedPlayers: config.playerChangesMax,
    steps,
    queueBehind: async () => {
      const { reserved, applied } = await eventQueue.queue.read();
      return reserved > applied;
    },
  });
  const events = await createEvents({
    database,
    engine,
    clock,
    eventQueue,
    retentionDays: config.eventRetentionDays,
    nameLimit: config.eventNameLimit,
    maxLagSeconds: config.eventMaxLagSeconds,
    maxQueueEvents: config.eventMaxQueueEvents,
    sumBackfillStep: config.eventSumBackfillStep,
    dbTimeoutMs: config.dbTimeoutMs,
    directory: players.directory,
    changes: players.changes,
    steps,
    worker: {
      onError: (err) => log.error({ err }, "event apply worker"),
    },
  });
  const configs = createConfig({ database, engine, clock, players, steps });
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
    generatedAdminKey: generatedKey,
    ownerMemory: engine.ownerMemory && {
      projectIds: () => projectStore.projectIds(),
      fills: [(projectId) => players.fillOwnerMemory(projectId), events.fillOwnerMemory, configs.fill],
    },
  };
}
