import type { AdminStore } from "../admin/store.js";
import type { Clock } from "../clock.js";
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import type { Logger } from "../log.js";
import { Keyring } from "./keyring.js";
import { LaunchTokens, type LaunchVerified } from "./launch-tokens.js";
import { LaunchStore } from "./store.js";

export interface Launch {
  tokens: LaunchTokens;
  keyring: Keyring;
  /** Stops the expired-token sweeper, if one runs. */
  stop(): void;
}

export interface LaunchOptions {
  config: Config;
  database: Database;
  adminStore: AdminStore;
  clock: Clock;
  log: Logger;
  onLaunchVerified?: (event: LaunchVerified) => Promise<void>;
}

// How often expired token documents are removed where the server has no TTL indexes.
const SWEEP_INTERVAL_MS = 60_000;

/** Launch tokens ready to serve: indexes made, keyring loaded, expired tokens swept where TTL indexes are missing. */
export async function createLaunch(options: LaunchOptions): Promise<Launch> {
  const { config, database, clock, log } = options;
  const store = new LaunchStore(database.db);
  await store.createIndexes({ ttl: !database.isFerretDb });
  const keyring = new Keyring({ store, tokenTtlMs: config.launchTokenTtlSeconds * 1000, clock });
  await keyring.start();
  const tokens = new LaunchTokens({
    store,
    adminStore: options.adminStore,
    keyring,
    issuer: config.tokenIssuer,
    ttlSeconds: config.launchTokenTtlSeconds,
    clock,
    log,
    onLaunchVerified: options.onLaunchVerified,
  });

  let sweeper: NodeJS.Timeout | undefined;
  if (database.isFerretDb) {
    sweeper = setInterval(() => {
      store
        .deleteExpiredTokens(clock.now())
        .catch((err: unknown) => log.warn({ err }, "sweeping expired launch tokens failed"));
    }, SWEEP_INTERVAL_MS);
    sweeper.unref();
  }
  return { tokens, keyring, stop: () => clearInterval(sweeper) };
}
