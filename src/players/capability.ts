import type { Clock } from "../clock.js";
import type { Database } from "../db/database.js";
import type { Engine } from "../db/engine.js";
import type { Logger } from "../log.js";
import { repairRegistryCounters } from "./membership/counter-repair.js";
import { repairMembership } from "./membership/membership-repair.js";
import { Players, type PlayersOptions } from "./players.js";
import { createPlayerIndexes, createPlayerStores } from "./storage/stores.js";

/**
 * Rounds younger than this may still be running on another instance (MongoDB
 * only: one instance owns an embedded FerretDB), so a start leaves them alone.
 */
const REPAIR_GRACE_MS = 5 * 60_000;

/**
 * A round waits for its players' locks at most this many database deadlines: room for a hot player's queue of
 * calls (a few operations a round), while a call stuck behind an overloaded database answers 503, having written
 * nothing, instead of waiting without end and writing after its client gave up.
 */
const LOCK_WAITS = 10;

/**
 * Players ready to serve: indexes made, tag membership repaired if a crash left it behind the profiles, registry
 * counters set to their records if a failed registration left them high.
 */
export async function createPlayers({
  database,
  engine,
  clock,
  log,
  histories,
  maxChangedPlayers,
  queueBehind,
  steps,
}: {
  database: Database;
  engine: Engine;
  clock: Clock;
  log?: Logger;
  histories?: PlayersOptions["histories"];
  maxChangedPlayers?: number;
  queueBehind?: PlayersOptions["queueBehind"];
  steps?: PlayersOptions["steps"];
}): Promise<Players> {
  const stores = createPlayerStores(database.db, engine, log);
  await createPlayerIndexes(stores);
  // The sole writer has no other instance mid-write: what the repairs find is no one's work in progress.
  await repairMembership({ stores, now: clock.now(), graceMs: engine.soleWriter ? 0 : REPAIR_GRACE_MS, log });
  await repairRegistryCounters({ stores, lower: engine.soleWriter, log });
  return new Players({
    stores,
    clock,
    histories,
    maxChangedPlayers,
    queueBehind,
    steps,
    log,
    lockWaitLimitMs: LOCK_WAITS * database.timeoutMs,
  });
}
