import { systemClock } from "../../src/clock.js";
import type { Database } from "../../src/db/database.js";
import { engineOf, type Engine } from "../../src/db/engine.js";
import { KeyedLock } from "../../src/db/keyed-lock.js";
import type { PlayerActivity } from "../../src/events/activity/activity-chunk.js";
import type { RawBatch } from "../../src/events/activity/raw-event-store.js";
import { createEventQueue } from "../../src/events/capability.js";
import { QueueStore } from "../../src/events/queue/queue-store.js";
import { createCohortSets } from "../../src/players/capability.js";
import { memberChange } from "../../src/players/rules/cohort-moves.js";
import type { ProfileRecord } from "../../src/players/rules/profile.js";
import { createPlayerStores } from "../../src/players/storage/stores.js";
import { CHUNK_BITS } from "../../src/sets/bitmap.js";
import { createSets, type Sets } from "../../src/sets/capability.js";
import { notTimed } from "../../src/steps.js";

/** Players written a batch at a time: one chunk of the sets' numbers. */
export const BATCH = 2 ** CHUNK_BITS;

/**
 * What a generator writes a new project with: the engine, the sets (with a cache of their own) and the players'
 * stores, the player numbers' reads answered "none" (newProjectEngine).
 */
export function generatorStores(database: Database) {
  const engine = newProjectEngine(engineOf(database));
  const sets = createSets({ database, engine, cacheBytes: 64 * 2 ** 20 });
  return { engine, sets, players: createPlayerStores(database.db, engine, sets.cache) };
}

/**
 * The engine, but answering "none" to every read of `player_numbers`: the project is new, so none of its keys has a
 * number yet, and a million point reads that find nothing would take longer than numbering them.
 */
function newProjectEngine(engine: Engine): Engine {
  return {
    ...engine,
    readByIds: (collection, ids) =>
      collection.collectionName === "player_numbers"
        ? Promise.resolve(ids.map(() => null))
        : engine.readByIds(collection, ids),
  };
}

/** Numbers every key in order, a batch at a time: the player of keys[i] gets number i (checked). */
export async function numberPlayers(numbers: Sets["numbers"], projectId: string, keys: readonly string[]) {
  for (let from = 0; from < keys.length; from += BATCH) {
    const batch = keys.slice(from, from + BATCH);
    const assigned = await numbers.assign(projectId, batch);
    batch.forEach((key, i) => {
      if (assigned.get(key) !== from + i) throw new Error(`${key}: numbered ${assigned.get(key)}, not ${from + i}`);
    });
  }
}

/**
 * Each of `count` players' joins of the profiles' set and their tags' sets, and their traits' columns, as a first
 * profile write makes them: player i has number i and `membershipOf(i)`.
 */
export async function writeMemberSets(
  sets: Sets,
  projectId: string,
  count: number,
  membershipOf: (i: number) => Pick<ProfileRecord, "tags" | "traits">,
): Promise<void> {
  // A generated project runs no experiment: its filters never name one.
  const cohorts = createCohortSets(sets, { variantsOf: async () => null });
  for (let from = 0; from < count; from += BATCH) {
    const changes = [];
    for (let i = from; i < Math.min(from + BATCH, count); i++) changes.push(memberChange(i, null, membershipOf(i))!);
    await cohorts.write(projectId, changes);
  }
}

/** The generated history is the project's queue segment 1, applied: what the service queues later comes after it. */
const HISTORY_SEQ = 1;

/**
 * Writes a generated history with the event stores (the worker never started): each day's activity, and raw events
 * where the bench reads them. Segment 1 of the project's queue is reserved and its cursor moved past it first.
 */
export async function historyWriter(database: Database, engine: Engine, sets: Sets, projectId: string) {
  const queue = new QueueStore(database.db, new KeyedLock());
  await queue.reserve(projectId);
  const { epoch } = await queue.read(projectId);
  if (!(await queue.advance(projectId, HISTORY_SEQ, HISTORY_SEQ, epoch))) throw new Error("queue: lease moved");
  const { activity, raw } = await createEventQueue({
    database,
    engine,
    sets,
    clock: systemClock,
    retentionDays: 400,
    eventIdWindowDays: 400,
    parkAfter: 5,
    backfillStepEvents: 50_000,
    steps: notTimed,
  });
  return {
    day: (day: string, byName: ReadonlyMap<string, readonly PlayerActivity[]>) =>
      activity.count(projectId, [{ seq: HISTORY_SEQ, days: new Map([[day, byName]]) }]),
    raw: (batches: readonly RawBatch[]) => raw.insert(projectId, HISTORY_SEQ, batches),
  };
}
