import { performance } from "node:perf_hooks";
import type { Collection } from "mongodb";
import { connectDatabase } from "../../src/db/database.js";
import { throwIfRefused, type Engine } from "../../src/db/engine.js";
import type { PlayerActivity } from "../../src/events/activity/activity-chunk.js";
import { dayOfNumber } from "../../src/events/kpis/periods.js";
import { EventNameStore } from "../../src/events/rollups/event-name-store.js";
import { SummedPropertyStore } from "../../src/events/rollups/summed-property-store.js";
import { Registration } from "../../src/players/rounds/registration.js";
import { partnerKey } from "../../src/players/rules/identity-key.js";
import { profileDocument, type ProfileDoc } from "../../src/players/storage/profile-document.js";
import { PLAYER_PROFILES } from "../../src/players/storage/profile-store.js";
import { createPlayerStores } from "../../src/players/storage/stores.js";
import { DuckWriter } from "./scale-duck-writer.js";
import {
  EVENT_NAMES,
  PURCHASE,
  ScaleModel,
  SUMMED,
  TAGS,
  TRAIT_KEY,
  type NameDay,
  type ScaleShape,
} from "./scale-model.js";
import { BATCH, generatorStores, historyWriter, numberPlayers, writeMemberSets } from "./stored-players.js";

export interface GenerateTask {
  databaseUri: string;
  dbName: string;
  projectId: string;
  shape: ScaleShape;
  /** The DuckDB file to write the raw events to; absent: none (the apply comparison's small project). */
  duckFile?: string;
}

const NO_SUMS: ReadonlyMap<string, number> = new Map();

/**
 * A project's players and events written straight into the service's collections, in their stored shape, by the
 * service's own stores and codecs: the numbers, the tag and trait registry, the profiles, the sets of tags and of
 * profiles, the trait's column, the activity chunks and their months' index, the event names, the summed property
 * and the queue; beside it, optionally, every event as a row of DuckDB. Each phase timed.
 */
export async function generate(task: GenerateTask) {
  const { projectId, shape } = task;
  const database = await connectDatabase(task.databaseUri, task.dbName, { timeoutMs: 120_000 });
  const { engine, sets, players: stores } = generatorStores(database);
  const phases: Record<string, number> = {};
  const timed = async <T>(phase: string, run: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const result = await run();
    phases[phase] = Math.round(performance.now() - started) / 1000;
    process.stderr.write(`scale generate: ${phase} ${phases[phase]} s\n`);
    return result;
  };
  try {
    const model = new ScaleModel(shape);
    const { lastPlayed, playingDays } = await timed("model_calibration", async () => model.calibrate());
    const keys = Array.from({ length: shape.players }, (_, i) => partnerKey(model.partnerId(i)));
    await timed("numbers", () => numberPlayers(sets.numbers, projectId, keys));
    const sumId = await timed("registry", () => register(database.db, stores, projectId));
    await timed("profiles", () =>
      writeProfiles(engine, database.db.collection<ProfileDoc>(PLAYER_PROFILES), task, model, lastPlayed),
    );
    await timed("tag_sets_and_trait_column", () =>
      writeMemberSets(sets, projectId, shape.players, (i) => {
        const tier = model.tierOf(i);
        return { tags: model.tagsOf(i), traits: new Map(tier === null ? [] : [[TRAIT_KEY, tier]]) };
      }),
    );
    const duck = task.duckFile ? await DuckWriter.create(task.duckFile) : undefined;
    const history = await historyWriter(database, engine, sets, projectId);
    let events = 0;
    await timed("activity_and_duckdb_events", async () => {
      for (let d = 0; d < shape.days; d++) {
        const byName = model.day(d);
        if (d === shape.days - 1) adjustCounts(byName, shape.events - events - eventsIn(byName));
        events += eventsIn(byName);
        const day = shape.lastDay - shape.days + 1 + d;
        await Promise.all([
          history.day(dayOfNumber(day), activityOf(byName, sumId)),
          duck?.appendDay(model, d, day, byName),
        ]);
      }
    });
    const duckRows =
      duck &&
      (await timed("duckdb_players_and_checkpoint", async () => {
        await duck.appendPlayers(model);
        return (await duck.close()).rows;
      }));
    return {
      phases,
      events,
      playing_days: playingDays,
      ...(duckRows !== undefined && { duckdb_event_rows: duckRows }),
    };
  } finally {
    await database.close();
  }
}

/** The tags and the trait key registered (the trait materialised), the names, the summed property. */
async function register(
  db: Parameters<typeof createPlayerStores>[0],
  stores: ReturnType<typeof createPlayerStores>,
  projectId: string,
): Promise<string> {
  const need = { index: 0, tags: [...TAGS], keys: [TRAIT_KEY], labels: new Map(TAGS.map((tag) => [tag, tag])) };
  const refused = await new Registration(stores).register(projectId, [need], new Date());
  if (refused.size > 0) throw new Error(`registration refused: ${[...refused.values()].join(", ")}`);
  await stores.traitKeys.materialise(projectId, TRAIT_KEY);
  await new EventNameStore(db, { limit: 1000, waitLimitMs: 10_000, soleWriter: true }).admit(projectId, EVENT_NAMES);
  const pairs = await new SummedPropertyStore(db).update(projectId, (current, nextId) => [
    ...current,
    { id: String(nextId), ...SUMMED, from: 0, ready: true },
  ]);
  return pairs.find((pair) => pair.name === SUMMED.name)!.id;
}

async function writeProfiles(
  engine: Engine,
  profiles: Collection<ProfileDoc>,
  { projectId, shape }: GenerateTask,
  model: ScaleModel,
  lastPlayed: Uint8Array,
): Promise<void> {
  for (let from = 0; from < shape.players; from += BATCH) {
    const operations = [];
    for (let i = from; i < Math.min(from + BATCH, shape.players); i++) {
      const { first, last } = model.seenAt(i, lastPlayed[i]);
      const tier = model.tierOf(i);
      const document = profileDocument({
        projectId,
        identityKey: partnerKey(model.partnerId(i)),
        partnerUserId: model.partnerId(i),
        deviceId: null,
        platformUserId: null,
        tags: model.tagsOf(i),
        traits: new Map(tier === null ? [] : [[TRAIT_KEY, tier]]),
        version: 1,
        firstSeenAt: first,
        lastSeenAt: last,
        number: i,
      });
      operations.push({ insertOne: { document } });
    }
    throwIfRefused("profiles", await engine.writeAll(profiles, operations));
  }
}

/** A day's events by name as the apply counts them: each player's events, and the cents of purchases in millionths. */
function activityOf(byName: ReturnType<ScaleModel["day"]>, sumId: string): Map<string, PlayerActivity[]> {
  return new Map(
    byName.map(({ players, counts, cents }, name) => [
      EVENT_NAMES[name],
      players.map((number, j) => ({
        number,
        events: counts[j],
        sums: cents ? new Map([[sumId, cents[j] * 10_000]]) : NO_SUMS,
      })),
    ]),
  );
}

/**
 * Adds `delta` events (or, negative, takes them away) among a day's counts of names other than purchases, one per
 * player and name in turn: what makes the history's total exact on its last day.
 */
function adjustCounts(byName: NameDay[], delta: number): void {
  let left = delta;
  while (left !== 0) {
    let changed = false;
    for (const [name, { counts }] of byName.entries()) {
      if (name === PURCHASE) continue;
      for (let j = 0; j < counts.length && left !== 0; j++) {
        if (left < 0 && counts[j] === 1) continue;
        counts[j] += Math.sign(left);
        left -= Math.sign(left);
        changed = true;
      }
    }
    if (!changed) throw new Error(`cannot take ${-left} more events away from the last day`);
  }
}

/** Events in a day's counts. */
const eventsIn = (byName: readonly NameDay[]): number =>
  byName.reduce((sum, { counts }) => counts.reduce((a, b) => a + b, sum), 0);
