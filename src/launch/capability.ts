import type { EntitlementStore } from "../admin/entitlement-store.js";
import type { ProjectStore } from "../admin/project-store.js";
import type { Clock } from "../clock.js";
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import type { Engine } from "../db/engine.js";
import type { Logger } from "../log.js";
import { FollowUps, type VerifiedLaunches } from "./follow-ups.js";
import { Keyring } from "./keyring.js";
import { LaunchTokens, type LaunchAnswers } from "./launch-tokens.js";
import { FollowUpStore } from "./follow-up-store.js";
import { SpendsInDoubt } from "./spends-in-doubt.js";
import { LaunchStore } from "./store.js";

export interface Launch {
  tokens: LaunchTokens;
  keyring: Keyring;
  /** Stops the sweeper. */
  stop(): void;
}

export interface LaunchOptions {
  config: Config;
  database: Database;
  engine: Engine;
  projectStore: ProjectStore;
  entitlementStore: EntitlementStore;
  clock: Clock;
  log: Logger;
  verifiedLaunches?: VerifiedLaunches;
  /** The player's config and experiments a valid verify answers. */
  answers: LaunchAnswers;
}

/**
 * Launch tokens ready to serve: indexes made, keyring loaded, and a sweeper
 * that completes the follow-ups of verifies cut short by a failure and, where
 * TTL indexes are missing, removes expired tokens.
 */
export async function createLaunch(options: LaunchOptions): Promise<Launch> {
  const { config, database, engine, projectStore, entitlementStore, clock, log } = options;
  const store = new LaunchStore(database.db);
  await store.createIndexes({ ttl: engine.ttlIndexes });
  const keyring = new Keyring({ store, tokenTtlMs: config.launchTokenTtlSeconds * 1000, clock });
  await keyring.start();
  const followUps = new FollowUps({
    tokens: store,
    store: new FollowUpStore(database.db),
    entitlementStore,
    projectStore,
    log,
    verifiedLaunches: options.verifiedLaunches,
  });
  // The sole writer's spends are the only ones (src/db/lease.ts).
  const spendsInDoubt = new SpendsInDoubt(engine.soleWriter);
  const tokens = new LaunchTokens({
    store,
    followUps,
    spendsInDoubt,
    projectStore,
    entitlementStore,
    keyring,
    issuer: config.tokenIssuer,
    ttlSeconds: config.launchTokenTtlSeconds,
    clock,
    answers: options.answers,
    log,
  });

  let sweeping = false;
  const sweeper = setInterval(() => {
    if (sweeping) return;
    sweeping = true;
    spendsInDoubt.prune(clock.now());
    sweep({ followUps, store, clock, ttl: engine.ttlIndexes })
      .catch((err: unknown) => log.warn({ err }, "sweeping launch tokens failed"))
      .finally(() => (sweeping = false));
  }, config.launchSweepSeconds * 1000);
  sweeper.unref();
  return { tokens, keyring, stop: () => clearInterval(sweeper) };
}

/** Follow-ups first: a follow-up owed by a spent token is completed before that token's documents expire. */
async function sweep(options: { followUps: FollowUps; store: LaunchStore; clock: Clock; ttl: boolean }) {
  const { followUps, store, clock, ttl } = options;
  await followUps.sweep(clock.now());
  if (!ttl) await store.deleteExpiredTokens(clock.now());
}
