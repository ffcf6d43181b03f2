import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectDatabase, type Database } from "../../src/db/database.js";
import { engineOf } from "../../src/db/engine.js";
import { activityCodec, type PlayerActivity } from "../../src/events/activity/activity-chunk.js";
import { ActivityStore, monthsCodec } from "../../src/events/activity/activity-store.js";
import { createExperimentStore } from "../../src/config/capability.js";
import { createCohortSets } from "../../src/players/capability.js";
import { PROFILES, tagSet } from "../../src/players/cohorts/cohort-sets.js";
import { CHUNK_BITS } from "../../src/sets/bitmap.js";
import { createSets } from "../../src/sets/capability.js";
import { spawnMain, type MainProcess } from "../support/service/main-process.js";
import { ADMIN_KEY } from "../support/service/service.js";

/**
 * A KPI read of a project of 1,000,000 players on the MongoDB path stays within a heap of 1 GB (issue 47, "Done
 * when"): the project's sets written straight into the database in their stored shape by the service's own stores
 * and codecs (the profiles' and tags' sets, the counter of numbers, a name's activity on each of DAYS days), the
 * service a process of its own whose heap may not pass 1 GB and whose peak resident memory (the bitmaps' native
 * memory in it) must not either, and retention and active players, whole and split by tags, equal to a brute force
 * over what was written.
 */
const PLAYERS = 1_000_000;
const DAYS = 4;
const HEAP_MB = 1024;
const DAY_MS = 86_400_000;
const TAGS = ["a", "b"];
/** Player i carries "a" when i % 3 = 0, "b" when i % 5 = 0. */
const carries = (i: number): string[] => TAGS.filter((_, t) => i % (t === 0 ? 3 : 5) === 0);
/** The days (0 = the oldest) player i plays on: a bit each, some none, from a hash of the number. */
const playedDays = (i: number): number => (Math.imul(i + 1, 2_654_435_761) >>> 7) & ((1 << DAYS) - 1);

let database: Database;
let service: MainProcess;
let projectId: string;
let key: string;
/** The DAYS days, oldest first, the last yesterday (UTC). */
const days = Array.from({ length: DAYS }, (_, d) =>
  new Date(Date.now() - (DAYS - d) * DAY_MS).toISOString().slice(0, 10),
);

beforeAll(async () => {
  const dbName = `test_million_${Date.now()}`;
  service = await spawnMain({
    MONGODB_URI: inject("mongodbUri"),
    DB_NAME: dbName,
    PLATFORM_ADMIN_KEY: ADMIN_KEY,
    NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}`,
  });
  await service.serving;
  const project = await post(
    "/v1/admin/projects",
    { name: "Million", game_id: 900_000_000 + (Date.now() % 1e8) },
    ADMIN_KEY,
  );
  projectId = project.project.project_id;
  key = project.private_key;
  database = await connectDatabase(inject("mongodbUri"), dbName, { timeoutMs: 60_000 });
  await writeProject(database, projectId);
}, 180_000);
afterAll(async () => {
  await service?.stop();
  await database?.db.dropDatabase();
  await database?.close();
});

async function post(path: string, body: object, apiKey = key): Promise<any> {
  const res = await fetch(service.baseUrl + path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": apiKey },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/** The project's sets and activity as players rounds and the apply leave them, a chunk of numbers at a time. */
async function writeProject(database: Database, projectId: string): Promise<void> {
  const engine = engineOf(database);
  const sets = createSets({ database, engine, cacheBytes: 0 });
  const cohorts = createCohortSets(sets, createExperimentStore(database, engine));
  const activity = new ActivityStore(
    sets.chunks("event_activity", activityCodec),
    sets.chunks("event_activity_days", monthsCodec),
    sets.numbers,
  );
  // What numbering PLAYERS players leaves in the counter (their keys' documents no KPI read reads).
  await database.db
    .collection<{ _id: string; next: number }>("player_number_counters")
    .insertOne({ _id: projectId, next: PLAYERS });
  const batch = 2 ** CHUNK_BITS;
  for (let from = 0; from < PLAYERS; from += batch) {
    const numbers = Array.from({ length: Math.min(batch, PLAYERS - from) }, (_, j) => from + j);
    const noTraits = new Map<string, string | null>();
    await cohorts.write(
      projectId,
      numbers.map((number) => ({
        number,
        join: [PROFILES, ...carries(number).map(tagSet)],
        leave: [],
        traits: noTraits,
      })),
    );
    const byDay = new Map(
      days.map((day, d) => {
        const players: PlayerActivity[] = numbers
          .filter((number) => (playedDays(number) >> d) & 1)
          .map((number) => ({ number, events: 1, sums: new Map() }));
        return [day, new Map([["play", players]])];
      }),
    );
    // One segment a batch, as the apply counts a segment once in each chunk.
    await activity.count(projectId, [{ seq: from / batch + 1, days: byDay }]);
  }
}

/** Retention and active players of the players `in` selects, by brute force over every player's days. */
function bruteForce(inCohort: (i: number) => boolean) {
  const today = DAYS; // days[DAYS] would be today: nothing played on it
  const starts = Array<number>(DAYS).fill(0);
  const returned = Array.from({ length: DAYS }, (_, d) => Array<number>(today - d + 1).fill(0));
  const dau = Array<number>(DAYS).fill(0);
  const upTo = Array<number>(DAYS).fill(0); // players with a day on or before d: wau and mau (all days within 7)
  for (let i = 0; i < PLAYERS; i++) {
    const played = playedDays(i);
    if (played === 0 || !inCohort(i)) continue;
    const first = 31 - Math.clz32(played & -played);
    starts[first]++;
    for (let d = 0; d < DAYS; d++) {
      if ((played >> d) & 1) {
        dau[d]++;
        returned[first][d - first] += d >= first ? 1 : 0;
      }
      if (d >= first) upTo[d]++;
    }
  }
  return {
    cohorts: days.map((date, d) => ({ date, players: starts[d], returned: returned[d] })),
    points: days.map((date, d) => ({ date, dau: dau[d], wau: upTo[d], mau: upTo[d], new_players: starts[d] })),
  };
}

describe("a KPI read of 1,000,000 players within a heap of 1 GB", () => {
  it("answers retention and active players, whole and split by tags, as the brute force does", async () => {
    const range = { from: days[0], to: days[DAYS - 1] };
    const split = { split_by: "tags", tags: TAGS };
    const retention = await post("/v1/events/retention", { ...range, interval: "day", periods: DAYS });
    const active = await post("/v1/events/active", range);
    const retentionSplit = await post("/v1/events/retention", { ...range, ...split, interval: "day", periods: DAYS });
    const activeSplit = await post("/v1/events/active", { ...range, ...split });
    const whole = bruteForce(() => true);
    const tagged = TAGS.map((tag) => ({ tag, ...bruteForce((i) => carries(i).includes(tag)) }));
    expect(retention.series).toEqual([{ tag: null, variant: null, cohorts: whole.cohorts }]);
    expect(active.series).toEqual([{ tag: null, variant: null, points: whole.points }]);
    expect(retentionSplit.series).toEqual(tagged.map(({ tag, cohorts }) => ({ tag, variant: null, cohorts })));
    expect(activeSplit.series).toEqual(tagged.map(({ tag, points }) => ({ tag, variant: null, points })));
    // Alive after the reads (its heap could not pass the bound), and its peak resident memory, the bitmaps' native
    // memory with it, within the bound too.
    expect(service.child.exitCode).toBeNull();
    const status = await readFile(`/proc/${service.child.pid}/status`, "utf8");
    const peakMb = Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)![1]) / 1024;
    expect(peakMb).toBeLessThan(HEAP_MB);
  }, 120_000);
});
