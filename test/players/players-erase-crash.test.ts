import type { Db, Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectDatabase, type Database } from "../../src/db/database.js";
import { workOf, type StoredWork } from "../../src/events/queue/segment-store.js";
import { DbProxy } from "../support/db-proxy.js";
import { bruteForce, byName } from "../support/events.js";
import { spawnMain, waitFor, type MainProcess } from "../support/main-process.js";
import { ADMIN_KEY } from "../support/service.js";

// An erasure acknowledged, then `kill -9` before anything behind its answer is written: the owner's membership and
// counts (their collection refused by a proxy between the service and the run's FerretDB) and the worker's erasure of
// the histories and raw events (the service runs with EVENT_WORKER=off). The test reads the database at the kill to
// see that window, then the next start on the same database answers as if the players never existed, with the
// owner's memory and without it.
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

async function post(main: MainProcess, path: string, body: object, key: string): Promise<any> {
  const res = await fetch(main.baseUrl + path, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await res.json();
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(answer)}`);
  return answer;
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
    .collection<{ project_id: string; work: StoredWork | null }>("event_segments")
    .find({ project_id: projectId })
    .toArray();
  const rawEvents = segments
    .flatMap((doc) => {
      const work = workOf(doc.work);
      return work?.kind === "events" ? work.events : [];
    })
    .filter((event) => event.u === "gone2").length;
  const history = await db
    .collection<Document & { _id: string }>("event_player_rollups")
    .findOne({ _id: `${projectId}/u:gone2` });
  const pages = await db.collection("player_tag_members").find({ project_id: projectId, tag: "vip" }).toArray();
  const changes = db
    .collection<Document & { _id: string }>("player_changes")
    .find({ _id: { $regex: `^${projectId}/` } });
  const entries = (await changes.toArray()).flatMap((doc) => Object.values((doc.p ?? {}) as Record<string, any>));
  return {
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

describe.each<{ memory: string; env: Record<string, string> }>([
  { memory: "the owner's memory", env: {} },
  { memory: "no owner's memory", env: { OWNER_MEMORY_MB: "0" } },
])("an erasure and a kill -9 before what follows it is written behind, restarted with $memory", ({ env }) => {
  it("is still erased after the next start: profile, counts, search and trends", async () => {
    const dbName = `erase-crash-${env.OWNER_MEMORY_MB ?? "memory"}-${Date.now()}`;
    const db = direct.client.db(dbName);
    const first = await start(dbName);
    const {
      project: { project_id: projectId },
      public_key: publicKey,
      private_key: privateKey,
    } = await post(first, "/v1/admin/projects", { name: "Erase", game_id: 5_002 }, ADMIN_KEY);
    const last = Date.now() - 60_000;
    const times = [last - DAY_MS, last].map((ms) => new Date(ms).toISOString());
    const days = times.map((time) => time.slice(0, 10));
    await post(
      first,
      "/v1/players/update",
      { players: PLAYERS.map((p) => ({ partner_user_id: p, tags: tagsOf(p) })) },
      privateKey,
    );
    const events = PLAYERS.flatMap((player, i) =>
      times.slice(i % 2).map((timestamp) => ({ name: "play", partner_user_id: player, timestamp })),
    );
    await post(first, "/v1/events", { events }, publicKey);
    await drained(first);
    await settled(first);

    // One erasure settled (only the next record takes it out of the database), then a clean stop.
    expect(await post(first, "/v1/players/delete", { partner_user_id: "gone1" }, privateKey)).toEqual({
      deleted: true,
      identity_key: "u:gone1",
    });
    await settled(first);
    expect(await first.stop()).toBe(0);

    // The next erasure answered with nothing behind it able to run: the worker off, membership's collection refused.
    const second = await start(dbName, { EVENT_WORKER: "off" });
    proxy.failCommandsHolding("player_tag_members");
    expect(await post(second, "/v1/players/delete", { partner_user_id: "gone2" }, privateKey)).toEqual({
      deleted: true,
      identity_key: "u:gone2",
    });
    expect(await metric(second, "platform_owner_membership_unwritten")).toBeGreaterThan(0);
    second.child.kill("SIGKILL");
    await second.exited;
    await proxy.restore();
    expect(await leftBehind(db, projectId)).toEqual({
      rawEvents: 1,
      historyDays: 1,
      vipMembers: ["u:gone2"],
      erasureRecorded: true,
    });
    await leaseExpired(db);

    const next = await start(dbName, env);
    await drained(next);
    const read = (path: string, body: object) => post(next, path, body, privateKey);
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
