import { engineOf } from "../../../src/db/engine.js";
import { createEventQueue } from "../../../src/events/capability.js";
import { createExperimentStore } from "../../../src/config/capability.js";
import { createCohortSets } from "../../../src/players/capability.js";
import { seenCodec, TagSeen } from "../../../src/players/cohorts/tag-seen.js";
import { Players } from "../../../src/players/players.js";
import { Registration } from "../../../src/players/rounds/registration.js";
import { repairSets } from "../../../src/players/rounds/cohort-sync.js";
import { createPlayerStores, type PlayerStores } from "../../../src/players/storage/stores.js";
import { createSets } from "../../../src/sets/capability.js";
import { systemClock } from "../../../src/clock.js";
import type { Database } from "../../../src/db/database.js";

/**
 * Where a test stops a players round, at the store calls around its commit point (the write path has no hooks of
 * its own):
 * - `afterTombstones`: after a round's write of its tombstones (none, often) and before the write of its profiles;
 * - `afterProfileWrites`: after the profiles, before their sets.
 */
export type RoundPoint = "afterTombstones" | "afterProfileWrites";

/**
 * Another instance's Players on `database` (and its start's repair of the sets), as createPlayers wires one (its
 * folds and erasures carried out under the projects' queues' leases, by the service's worker while it holds them), with `fault` run at `point` of every round: a
 * throw there fails the round as a database error would. The service must keep nothing of what it read (CACHE_MB=0):
 * what another writer changes is not in its cache.
 */
export async function playersOn(
  database: Database,
  { point, fault, lockWaitLimitMs }: { point?: RoundPoint; fault?: () => unknown; lockWaitLimitMs?: number } = {},
): Promise<{ players: Players; stores: PlayerStores; repairSets: (now: Date) => Promise<number> }> {
  const engine = engineOf(database);
  const sets = createSets({ database, engine, cacheBytes: 0 });
  const queue = await createEventQueue({
    database,
    engine,
    sets,
    clock: systemClock,
    retentionDays: 400,
    eventIdWindowDays: 30,
    parkAfter: 5,
    backfillStepEvents: 50_000,
    steps: { recordStep: () => undefined },
  });
  const stores = createPlayerStores(database.db, engine, sets.cache);
  const cohorts = createCohortSets(sets, createExperimentStore(database, engine));
  if (fault && point === "afterTombstones") {
    const writeSlots = stores.profiles.writeSlots.bind(stores.profiles);
    stores.profiles.writeSlots = async (projectId, writes) => {
      const lost = await writeSlots(projectId, writes);
      // The round's first write: its tombstones (each names the profile it folds into), or nothing to fold.
      if (writes.every((write) => "foldedInto" in write.next)) await fault();
      return lost;
    };
  }
  if (fault && point === "afterProfileWrites") {
    const write = cohorts.write.bind(cohorts);
    cohorts.write = async (...args) => {
      await fault();
      return write(...args);
    };
  }
  const registration = new Registration(stores);
  const players = new Players({
    stores,
    cohorts,
    numbers: sets.numbers,
    registration,
    seen: new TagSeen(sets.chunks("player_tag_seen", seenCodec), registration),
    activity: queue.changes,
    clock: systemClock,
    lockWaitLimitMs,
  });
  // A start's repair of the players' sets, as createPlayers runs it (the sole writer's: every intent found).
  return { players, stores, repairSets: (now) => repairSets(stores, cohorts, now) };
}
