import type { Db, Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectDatabase, type Database } from "../../../src/db/database.js";
import { workOf, type StoredWork } from "../../../src/events/queue/segment-store.js";
import { DbProxy } from "../../support/db/db-proxy.js";
import { bruteForce, byName } from "../../support/service/events.js";
import { postTo, spawnMain, waitFor, type MainProcess } from "../../support/service/main-process.js";
import { ADMIN_KEY } from "../../support/service/service.js";

// An erasure acknowledged, then `kill -9` at a known point behind its answer, held there by a proxy between the service
// and the run's FerretDB that refuses one collection, and by EVENT_WORKER=off: before anything is written (membership
// refused, the worker off), or once the worker applied the erasure but its histories are not written (their collection
// refused). The test reads the database at the kill to see that window; the next start on the same database answers
// as if the players never existed, with the owner's memory and without it.
const DAY_MS = 86_400_000;
const PLAYERS = ["ann", "ben", "gone1", "gone2"];
const tagsOf = (player: string) => (player.startsWith("gone") ? ["red", "vip"] : ["red"]);

let proxy: DbProxy;
let direct: Database;
const started: MainProcess[] = [];
beforeAll(async () => {
  proxy = await DbProxy.start(inject("mongodbUri"));
  direct = await connectDatabase(inject("mongodbUri"), "erase-crash-reads");
});
afterAll(async () => {
  await proxy.restore();
  await Promise.all(started.map((p) => p.stop()));
  await direct.close();
  proxy.cut();
});

async function start(dbName: string, env: Record<string, string> = {}): Promise<MainProcess> {
  const main = await spawnMain({
    MONGODB_URI: proxy.uri,
    DB_NAME: dbName,
    DB_LEASE_SECONDS: "3",
    PLATFORM_ADMIN_KEY: ADMIN_KEY,
    ...env,
  });
  started.push(main);
  expect(await main.outcome).toBe("serving");
  return main;
}

async function metric(main: MainProcess, name: string): Promise<number> {
  const text = await (await fetch(`${main.baseUrl}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? NaN);
}

const drained = (main: MainProcess) =>
  waitFor(
    async () => (await (await fetch(`${main.baseUrl}/readyz`)).json()).events?.queue_depth === 0,
    120_000,
    "the queue to be applied",
  );

/** Until the owner wrote its membership and every recorded change is settled: nothing left behind the rounds. */
const settled = (main: MainProcess) =>
  waitFor(
    async () =>
      (await metric(main, "platform_owner_membership_unwritten")) === 0 &&
      (await metric(main, "platform_owner_changes_unsettled")) === 0,
    120_000,
    "the rounds to be settled",
  );

/** What the database holds of u:gone2 at the kill: each part an erasure leaves to be written behind its answer. */
async function leftBehind(db: Db, projectId: string) {
  const segments = await db
    .collection<{ _id: string; project_id: string; work: StoredWork | null }>("event_segments")
    .find({ project_id: projectId })
    .toArray();
  const works = segments.map((doc) => ({ seq: Number(doc._id), work: workOf(doc.work) }));
  const rawEvents = works
    .flatMap(({ work }) => (work?.kind === "events" ? work.events : []))
    .filter((event) => event.u === "gone2").length;
  const erasure = works.find(({ work }) => work?.kind === "resync" && work.erased?.includes("u:gone2"))!.seq;
  const cursor = await db.collection<Document & { _id: string }>("event_queue").findOne({ _id: "cursor" });
  const history = await db
    .collection<Document & { _id: string }>("event_player_rollups")
    .findOne({ _id: `${projectId}/u:gone2` });
  const pages = await db.collection("player_tag_members").find({ project_id: projectId, tag: "vip" }).toArray();
  const changes = db
    .collection<Document & { _id: string }>("player_changes")
    .find({ _id: { $regex: `^${projectId}/` } });
  const entries = (await changes.toArray()).flatMap((doc) => Object.values((doc.p ?? {}) as Record<string, any>));
  return {
    erasureApplied: cursor!.applied >= erasure || (cursor!.ahead ?? []).includes(erasure),
    historiesWritten: (cursor!.written ?? cursor!.applied) >= erasure,
    rawEvents,
    historyDays: Object.keys(history?.days ?? {}).length,
    vipMembers: pages.flatMap((page) => JSON.parse(page.members ?? "[]") as string[]).sort(),
    erasureRecorded: entries.some((entry) => entry.k === "u:gone2" && typeof entry.e === "number"),
  };
}

/** After a kill -9, once the dead instance's lease has expired (the database is not an embedded one it may take over). */
async function leaseExpired(db: Db) {
  const leases = await db.collection<{ expiresAt: Date }>("instance_lease").find().toArray();
  const until = Math.max(...leases.map((lease) => lease.expiresAt.getTime()));
  await waitFor(async () => Date.now() > until, 30_000, "the killed instance's lease to expire");
}

/** Where the erasure of gone2 is when the service is killed, and what the database holds of gone2 then. */
interface KillPoint {
  env: Record<string, string>;
  /** The collection the proxy refuses from the delete to the kill. */
  refused: string;
  /** Waits, after the answer, until the service is in the window. */
  reached(main: MainProcess, db: Db, projectId: string): Promise<void>;
  atKill: Partial<Awaited<ReturnType<typeof leftBehind>>>;
}
const KILL_POINTS: Record<string, KillPoint> = {
  "before anything behind the answer": {
    env: { EVENT_WORKER: "off" },
    refused: "player_tag_members",
    reached: async (main) => expect(await metric(main, "platform_owner_membership_unwritten")).toBeGreaterThan(0),
    atKill: {
      erasureApplied: false,
      historiesWritten: false,
      rawEvents: 1,
      historyDays: 1,
      vipMembers: ["u:gone2"],
      erasureRecorded: true,
    },
  },
  "with the erasure applied and its histories not written": {
    env: {},
    refused: "event_player_rollups",
    // The worker moved the cursor past the erasure; membership is written behind meanwhile or not.
    reached: (_main, db, projectId) =>
      waitFor(async () => (await leftBehind(db, projectId)).erasureApplied, 120_000, "the erasure to be applied"),
    atKill: { erasureApplied: true, historiesWritten: false, rawEvents: 0, historyDays: 1, erasureRecorded: true },
  },
};

describe.each(
  Object.keys(KILL_POINTS).flatMap((kill) => [
    { kill, memory: "the owner's memory", env: {} as Record<string, string> },
    { kill, memory: "no owner's memory", env: { OWNER_MEMORY_MB: "0" } },
  ]),
)("an erasure and a kill -9 $kill, restarted with $memory", ({ kill, env }) => {
  it("is still erased after the next start: profile, counts, search and trends", async () => {
    const point = KILL_POINTS[kill];
    const dbName = `erase-crash-${Date.now()}`;
    const db = direct.client.db(dbName);
    const first = await start(dbName);
    const {
      project: { project_id: projectId },
      public_key: publicKey,
      private_key: privateKey,
    } = await postTo(first, "/v1/admin/projects", { name: "Erase", game_id: 5_002 }, ADMIN_KEY);
    const last = Date.now() - 60_000;
    const times = [last - DAY_MS, last].map((ms) => new Date(ms).toISOString());
    const days = times.map((time) => time.slice(0, 10));
    await postTo(
      first,
      "/v1/players/update",
      { players: PLAYERS.map((p) => ({ partner_user_id: p, tags: tagsOf(p) })) },
      privateKey,
    );
    const events = PLAYERS.flatMap((player, i) =>
      times.slice(i % 2).map((timestamp) => ({ name: "play", partner_user_id: player, timestamp })),
    );
    await postTo(first, "/v1/events", { events }, publicKey);
    await drained(first);
    await settled(first);

    // One erasure settled (only the next record takes it out of the database), then a clean stop.
    expect(await postTo(first, "/v1/players/delete", { partner_user_id: "gone1" }, privateKey)).toEqual({
      deleted: true,
      identity_key: "u:gone1",
    });
    await settled(first);
    expect(await first.stop()).toBe(0);

    // The next erasure, held at the kill point: once the service is ready (its start reads that collection too).
    const second = await start(dbName, point.env);
    proxy.failCommandsHolding(point.refused);
    expect(await postTo(second, "/v1/players/delete", { partner_user_id: "gone2" }, privateKey)).toEqual({
      deleted: true,
      identity_key: "u:gone2",
    });
    await point.reached(second, db, projectId);
    second.child.kill("SIGKILL");
    await second.exited;
    await proxy.restore();
    expect(await leftBehind(db, projectId)).toMatchObject(point.atKill);
    await leaseExpired(db);

    const next = await start(dbName, env);
    await drained(next);
    const read = (path: string, body: object) => postTo(next, path, body, privateKey);
    for (const gone of ["gone1", "gone2"]) {
      expect((await read("/v1/players/get", { partner_user_id: gone })).found).toBe(false);
    }
    const { tags } = await read("/v1/players/tags", { page: 1, page_size: 100 });
    expect(Object.fromEntries(tags.map((t: any) => [t.tag, t.players_count]))).toEqual({ red: 2, vip: 0 });
    const found = await read("/v1/players/search", { tags: ["red", "vip"], page_size: 100 });
    expect(found.players.map((p: { partner_user_id: string }) => p.partner_user_id)).toEqual(["ann", "ben"]);
    const kept = events.filter((e) => !e.partner_user_id.startsWith("gone"));
    const raw = kept.map((e) => ({ name: e.name, player: e.partner_user_id, day: e.timestamp.slice(0, 10) }));
    for (const [filter, want] of [
      [{}, bruteForce(raw, days)],
      [{ tags: ["red"] }, bruteForce(raw, days)],
      [{ tags: ["vip"] }, bruteForce([], days)],
    ] as const) {
      const trends = await read("/v1/events/trends", { from: days[0], to: days[1], ...filter });
      expect([...byName(trends)], JSON.stringify(filter)).toEqual([...want]);
    }
    expect(await next.stop()).toBe(0);
  }, 240_000);
});
