import { Admin } from "../admin/admin.js";
import { ApiKeyCache } from "../admin/api-key-cache.js";
import { ensureBootstrapAdminKey } from "../admin/bootstrap.js";
import { AdminStore } from "../admin/store.js";
import type { Clock } from "../clock.js";
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import { createEvents, type EventsCapability } from "../events/capability.js";
import { partnerKey } from "../players/identity-key.js";
import { createLaunch, type Launch } from "../launch/capability.js";
import type { Logger } from "../log.js";
import { createPlayers } from "../players/capability.js";
import type { Players } from "../players/players.js";

/** The domain objects the handlers translate to, built once per start. */
export interface Capabilities {
  admin: Admin;
  apiKeys: ApiKeyCache;
  launch: Launch;
  players: Players;
  events: EventsCapability;
  /** The admin key generated at this start (first start without PLATFORM_ADMIN_KEY), to be shown once. */
  generatedAdminKey: string | undefined;
}

export interface CapabilityOptions {
  config: Config;
  database: Database;
  log: Logger;
  clock: Clock;
}

/** Creates indexes, the bootstrap admin key and the keyring, and wires launch verifies into players. */
export async function createCapabilities({ config, database, log, clock }: CapabilityOptions): Promise<Capabilities> {
  const adminStore = new AdminStore(database.db);
  await adminStore.createIndexes();
  const { generatedKey } = await ensureBootstrapAdminKey(adminStore, config.adminKey, clock.now());
  const apiKeys = new ApiKeyCache({ store: adminStore, ttlMs: config.apiKeyCacheSeconds * 1000, clock });
  const players = await createPlayers({ database, clock });
  const events = await createEvents({
    database,
    clock,
    retentionDays: config.eventRetentionDays,
    worker: { onError: (err) => log.error({ err }, "event apply worker") },
  });
  const launch = await createLaunch({
    config,
    database,
    adminStore,
    clock,
    log,
    onLaunchVerified: async (event) => {
      await players.onLaunchVerified(event);
      // The installation's events follow it to the verified player.
      await events.events.onDeviceFolded(event.projectId, event.installationId, partnerKey(event.partnerUserId));
    },
  });
  return {
    admin: new Admin({ store: adminStore, apiKeys, clock }),
    apiKeys,
    launch,
    players,
    events,
    generatedAdminKey: generatedKey,
  };
}
