import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandsOf, startedDuring } from "../support/commands.js";
import { eventTimes, queueOf, waitFor } from "../support/service/events.js";
import { ownerRoundsDone } from "../support/service/metrics.js";
import { startTestService, type TestService } from "../support/service/service.js";

const PLAYERS = 5_000;
const TAGS = ["red", "green", "blue", "gold"];
const tagsOf = (i: number) => [TAGS[i % 4], ...(i % 10 === 0 ? ["vip"] : [])];

let before: TestService;
let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;
let ownerMemoryAtReady: number;
/** The time and day of every event sent. */
let sentAt: string;
let day: string;

/** The owner's memory estimate from /metrics. */
async function ownerMemoryBytes(service: TestService): Promise<number> {
  const text = await (await fetch(`${service.baseUrl}/metrics`)).text();
  return Number(/^platform_owner_memory_bytes (\S+)$/m.exec(text)?.[1] ?? NaN);
}

beforeAll(async () => {
  before = await startTestService();
  project = await before.createProject();
  for (let from = 0; from < PLAYERS; from += 100) {
    const players = Array.from({ length: 100 }, (_, k) => ({
      partner_user_id: `p-${from + k}`,
      tags_add: tagsOf(from + k),
      traits: { level: (from + k) % 7 },
    }));
    await before.postOk("/v1/players/update", { players }, project.publicKey);
  }
  const [{ timestamp }] = eventTimes(before, 1);
  [sentAt, day] = [timestamp, timestamp.slice(0, 10)];
  for (let from = 0; from < PLAYERS; from += 1000) {
    const events = Array.from({ length: 1000 }, (_, k) => ({
      name: "play",
      partner_user_id: `p-${from + k}`,
      timestamp,
    }));
    await before.postOk("/v1/events", { events }, project.publicKey);
  }
  await waitFor(
    () => queueOf(before),
    (queue) => queue.queue_depth === 0,
    120_000,
  );
  await ownerRoundsDone(before);
  // A restart: the service stops and another starts on the same database.
  await before.service.close();
  await before.database.close();
  svc = await startTestService({ DB_NAME: before.config.dbName });
  ownerMemoryAtReady = await ownerMemoryBytes(svc);
}, 600_000);
afterAll(() => svc?.stop());

/** The reads (`find` commands) `call` makes, but the API key's (looked up once a key, whatever the call). */
const readsOf = async (call: () => Promise<unknown>) =>
  (await commandsOf(svc.database.client, call)).filter((name) => name.startsWith("find ") && name !== "find api_keys");

describe("a restart of the owner of an embedded database", () => {
  it("fills the owner's memory before it is ready: the first search, get, update, tag listing and trends read make the reads of the calls after them", async () => {
    // Filled before ready: thousands of profiles and histories, at ~1 KB each.
    expect(ownerMemoryAtReady).toBeGreaterThan(PLAYERS * 1000);
    const key = project.privateKey;
    const calls: Record<string, (i: number) => Promise<unknown>> = {
      search: (i) => svc.postOk("/v1/players/search", { tags: [TAGS[i]] }, key),
      get: (i) => svc.postOk("/v1/players/get", { partner_user_id: `p-${100 + i}` }, key),
      update: (i) =>
        svc.postOk("/v1/players/update", { players: [{ partner_user_id: `p-${201 + i}`, tags_add: ["vip"] }] }, key),
      tag_listing: (i) => svc.postOk("/v1/players/tags", { page: 1 + i, page_size: 2 }, key),
      trends: (i) =>
        svc.postOk("/v1/events/trends", { from: day, to: day, tags: [TAGS[i], "vip"], tags_match: "all" }, key),
    };
    // Each call's reads alone: the update's resync is applied before the next call, as the worker's first apply of the
    // project since the start reads its trait keys and summed properties (once), whenever it lands.
    const first: Record<string, string[]> = {};
    for (const [name, call] of Object.entries(calls)) {
      first[name] = await readsOf(() => call(0));
      await ownerRoundsDone(svc);
    }
    const again: Record<string, string[]> = {};
    for (const [name, call] of Object.entries(calls)) {
      again[name] = await readsOf(() => call(1));
      await ownerRoundsDone(svc);
    }
    expect(first).toEqual(again);
    // None of them scans a collection the owner keeps in memory.
    expect(Object.values(first).flat()).not.toContainEqual(expect.stringMatching(/profiles|members|rollups|accounts/));
  });

  it("answers exactly after the restart: a tag's search total and a trends count", async () => {
    const red = await svc.postOk("/v1/players/search", { tags: ["red"], page_size: 1 }, project.privateKey);
    expect(red.players_info.total).toBe(PLAYERS / 4);
    const trends = await svc.postOk(
      "/v1/events/trends",
      { from: day, to: day, names: ["play"], tags: ["red"] },
      project.privateKey,
    );
    expect(trends.series[0].points[0]).toMatchObject({ events: PLAYERS / 4, players: PLAYERS / 4 });
  });
});

/** The histories `call` reads one player at a time (by `_id`): what a project whole in the owner's memory never needs. */
const historyReadsOf = async (call: () => Promise<unknown>) =>
  (await startedDuring(svc.database.client, call)).filter(
    ({ commandName, command }) =>
      commandName === "find" && command.find === "event_player_rollups" && typeof command.filter?._id === "string",
  ).length;

/** The queue's cursor as stored: what is applied, and through which segment the histories are written. */
const cursor = ({ db }: { db: TestService["database"]["db"] }) =>
  db.collection<{ _id: string; applied: number; written: number }>("event_queue").findOne({ _id: "cursor" });

describe("a restart after a stop that wrote the histories and not the cursor saying so (a crash between the two)", () => {
  /** A second project, whose segments all come before those the next start writes again. */
  let other: Awaited<ReturnType<TestService["createProject"]>>;
  beforeAll(async () => {
    other = await svc.createProject();
    const players = Array.from({ length: 20 }, (_, k) => ({ partner_user_id: `o-${k}`, tags_add: ["x", "y"] }));
    await svc.postOk("/v1/players/update", { players }, other.publicKey);
    const events = players.map(({ partner_user_id }) => ({
      name: "play",
      partner_user_id,
      timestamp: sentAt,
    }));
    await svc.postOk("/v1/events", { events }, other.publicKey);
    await waitFor(
      () => queueOf(svc),
      (queue) => queue.queue_depth === 0,
    );
    await ownerRoundsDone(svc);
    const { applied: otherApplied } = (await cursor(svc.database))!;
    // Then one more event of the first project (a red and vip player), in a segment after the other's.
    const more = [{ name: "play", partner_user_id: "p-0", timestamp: sentAt }];
    await svc.postOk("/v1/events", { events: more }, project.publicKey);
    await waitFor(
      () => queueOf(svc),
      (queue) => queue.queue_depth === 0,
    );
    await svc.service.close();
    // The next start writes the first project's last segments again from their plans, before it is ready.
    await svc.database.db
      .collection<{ _id: string }>("event_queue")
      .updateOne({ _id: "cursor" }, { $set: { written: otherApplied } });
    await svc.database.close();
    let left = { applied: 0, written: 0 };
    svc = await startTestService(
      { DB_NAME: before.config.dbName },
      { beforeStart: async (database) => void (left = (await cursor(database))!) },
    );
    expect(left.written).toBe(otherApplied);
    expect(left.applied).toBeGreaterThan(otherApplied);
  }, 600_000);

  it("fills the histories before it is ready: the first trends reads of both projects, by tags and unfiltered, read no history by its id, and count exactly", async () => {
    const trends = async (body: object, key: string) => {
      let answer: any;
      const reads = await historyReadsOf(async () => (answer = await svc.postOk("/v1/events/trends", body, key)));
      return { reads, point: answer.series[0].points[0] };
    };
    const range = { from: day, to: day, names: ["play"] };
    const tagged = await trends({ ...range, tags: ["red", "vip"], tags_match: "all" }, project.privateKey);
    const everyone = await trends(range, project.privateKey);
    const otherTagged = await trends({ ...range, tags: ["x", "y"], tags_match: "all" }, other.privateKey);
    expect([tagged.reads, everyone.reads, otherTagged.reads]).toEqual([0, 0, 0]);
    // Red and vip: every 20th player; p-0 twice.
    expect(tagged.point).toMatchObject({ events: PLAYERS / 20 + 1, players: PLAYERS / 20 });
    expect(everyone.point).toMatchObject({ events: PLAYERS + 1, players: PLAYERS });
    expect(otherTagged.point).toMatchObject({ events: 20, players: 20 });
  });
});
