import type { AdminStore } from "../admin/store.js";
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import type { Logger } from "../log.js";
import { Keyring } from "./keyring.js";
import { LaunchTokens, type LaunchVerified } from "./launch-tokens.js";
import { createLaunchServices, type LaunchServices } from "./service.js";
import { LaunchStore } from "./store.js";

export interface LaunchCapability extends LaunchServices {
  /** Stops the expired-token sweeper, if one runs. */
  stop(): void;
}

// How often expired token documents are removed where the server has no TTL indexes.
const SWEEP_INTERVAL_MS = 60_000;

export async function createLaunch(deps: {
  config: Config;
  database: Database;
  adminStore: AdminStore;
  now: () => Date;
  log: Logger;
  onLaunchVerified?: (event: LaunchVerified) => Promise<void>;
}): Promise<LaunchCapability> {
  const { config, database, now, log } = deps;
  const store = new LaunchStore(database.db);
  await store.createIndexes({ ttl: !database.isFerretDb });
  const keyring = new Keyring(store, config.launchTokenTtlSeconds * 1000, now);
  await keyring.start();
  const tokens = new LaunchTokens({
    store,
    adminStore: deps.adminStore,
    keyring,
    issuer: config.tokenIssuer,
    ttlSeconds: config.launchTokenTtlSeconds,
    now,
    log,
    onLaunchVerified: deps.onLaunchVerified,
  });

  let sweeper: NodeJS.Timeout | undefined;
  if (database.isFerretDb) {
    sweeper = setInterval(() => {
      store
        .deleteExpiredTokens(now())
        .catch((err: unknown) => log.warn({ err }, "sweeping expired launch tokens failed"));
    }, SWEEP_INTERVAL_MS);
    sweeper.unref();
  }
  return { ...createLaunchServices(tokens, keyring), stop: () => clearInterval(sweeper) };
}
