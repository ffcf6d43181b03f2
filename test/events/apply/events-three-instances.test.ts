import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ownerOf } from "../../../src/events/apply/workers.js";
import { active, retention } from "../../support/models/kpi-model.js";
import { bruteForce, byName, eventTimes, waitFor, type EventTime } from "../../support/service/events.js";
import { spawnMain, waitFor as pollUntil, type MainProcess } from "../../support/service/main-process.js";
import { ADMIN_KEY, startTestService, type TestService } from "../../support/service/service.js";

/**
 * Three instances applying one database's queues (ISOLATION_ONLY in vitest.config.ts): this process's, and two service
 * processes the test SIGKILLs, one while it holds a project's lease mid-run, the other between reserving a sequence
 * number and writing its segment. A call that got no answer is sent again, same event_ids, to an instance alive.
 */
const CALLS = 200;
const EVENTS = 500;
const PLAYERS = 300;
const NAMES = ["buy", "level_up", "match"];
/** Calls answered before the first instance is killed. */
const HOLDER_KILLED_AFTER = 30;
/** Calls from this one on wait for the holder's project to be taken over: the reserver's death needs calls left. */
const HELD_BACK_FROM = 60;
const SENDERS = 3;

type Raw = { name: string; player: string; day: string };
interface Game {
  projectId: string;
  publicKey: string;
  privateKey: string;
  raw: Raw[];
  vip: Set<string>;
}

let a: TestService;
let holder: MainProcess;
let reserver: MainProcess;
let times: EventTime[];
beforeAll(async () => {
  a = await startTestService();
  times = eventTimes(a, 3);
});
afterAll(async () => {
  await Promise.all([holder, reserver].map((p) => p?.stop()));
  await a?.stop();
});

const workerIds = async () =>
  (await a.database.db.collection<{ _id: string }>("event_workers").find({}).toArray()).map((doc) => doc._id);
const queueDoc = (projectId: string) =>
  a.database.db
    .collection<{ _id: string; seq: number; applied: number; owner: string | null; until: Date }>("event_queues")
    .findOne({ _id: projectId });

/** A service process on the suite's database, and the id its apply worker registered under. */
async function instance(): Promise<{ main: MainProcess; workerId: string }> {
  const before = await workerIds();
  const main = await spawnMain(
    { MONGODB_URI: inject("mongodbUri"), DB_NAME: a.config.dbName, PLATFORM_ADMIN_KEY: ADMIN_KEY },
    { entry: "test/support/service/segment-kill-main.ts" },
  );
  await main.serving;
  const [workerId] = await waitFor(
    async () => (await workerIds()).filter((id) => !before.includes(id)),
    (ids) => ids.length === 1,
  );
  return { main, workerId };
}

const alive = (main: MainProcess) => main.child.exitCode === null && main.child.signalCode === null;

describe("three instances on one database", () => {
  it("a killed lease holder's project is taken over within 12 s, the queues drain, KPIs equal a brute force", async () => {
    await waitFor(workerIds, (ids) => ids.length === 1);
    const [aId] = await workerIds();
    const b = await instance();
    holder = b.main;
    const c = await instance();
    reserver = c.main;
    const ids = [aId, b.workerId, c.workerId];

    // A project for each instance's worker (rendezvous hashing shares them out): the holder's is the one killed.
    const games = new Map<string, Game>();
    while (games.size < 3) {
      const project = await a.createProject();
      const owner = ownerOf(project.projectId, ids);
      if (!games.has(owner)) games.set(owner, { ...project, raw: [], vip: new Set() });
    }
    const projects = ids.map((id) => games.get(id)!);

    const instances = [a.baseUrl, holder.baseUrl, reserver.baseUrl];
    const live = () => instances.filter((_, i) => i === 0 || alive([holder, reserver][i - 1]));
    let answered = 0;
    const post = async (turn: number, path: string, body: object, key: string) => {
      for (let attempt = 0; ; attempt++) {
        const urls = live();
        try {
          const res = await fetch(urls[(turn + attempt) % urls.length] + path, {
            method: "POST",
            headers: { "x-api-key": key, "content-type": "application/json" },
            body: JSON.stringify(body),
          });
          // Nothing is refused for the queues' lag or size: a 429 fails the test.
          if (res.status === 200) return await res.json();
          if (res.status !== 503 || attempt > 20) throw new Error(`${path}: ${res.status} ${await res.text()}`);
        } catch (error) {
          // A killed instance's connection: the call is sent again, to another one.
          if (!(error instanceof TypeError) || attempt > 20) throw error;
        }
      }
    };

    let next = 0;
    let holderTakenOver!: () => void;
    const takenOver = new Promise<void>((resolve) => (holderTakenOver = resolve));
    const send = async () => {
      for (let call = next++; call < CALLS; call = next++) {
        if (call >= HELD_BACK_FROM) await takenOver;
        const game = projects[call % 3];
        const events = Array.from({ length: EVENTS }, (_, i) => {
          const player = `p${(call * 17 + i) % PLAYERS}`;
          const { day, timestamp } = times[(call + i) % 3];
          return {
            raw: { name: NAMES[i % 3], player, day },
            event: { name: NAMES[i % 3], partner_user_id: player, timestamp, event_id: `${call}-${i}` },
          };
        });
        const got = await post(
          call + Math.floor(call / 3),
          "/v1/events",
          { events: events.map((e) => e.event) },
          game.publicKey,
        );
        expect(got.rejected ?? []).toEqual([]);
        game.raw.push(...events.map((e) => e.raw));
        answered++;
      }
    };
    // Tag changes, one at a time, through this process's instance while the events go to all three.
    const tag = async () => {
      for (let change = 0; change < 30; change++) {
        await pollUntil(async () => answered >= change * 6 || next >= CALLS, 300_000, "calls answered");
        const game = projects[change % 3];
        const players = Array.from({ length: 10 }, (_, i) => `p${(change * 37 + i * 29) % PLAYERS}`);
        const remove = change % 4 === 3;
        const body = {
          players: players.map((p) => ({ partner_user_id: p, [remove ? "tags_remove" : "tags_add"]: ["vip"] })),
        };
        await post(0, "/v1/players/update", body, game.publicKey);
        for (const p of players)
          if (remove) game.vip.delete(p);
          else game.vip.add(p);
      }
    };
    // An instance killed while a project's lease is its own and work waits: the time until another worker takes it.
    const takeOver = async (workerId: string, kill: () => Promise<unknown>) => {
      const { projectId } = games.get(workerId)!;
      const holds = (q: Awaited<ReturnType<typeof queueDoc>>) =>
        q !== null && q.owner === workerId && q.until.getTime() > Date.now() && q.seq > q.applied;
      await pollUntil(async () => holds(await queueDoc(projectId)), 60_000, "a lease held with work waiting");
      await kill();
      const killedAt = Date.now();
      await pollUntil(async () => (await queueDoc(projectId))!.owner !== workerId, 60_000, "another worker's lease");
      return Date.now() - killedAt;
    };
    // The holder first; the other once its share is taken over, at its next ingest (not at once: two deaths in a row
    // wait for both leases).
    const kills = async () => {
      await pollUntil(async () => answered >= HOLDER_KILLED_AFTER, 120_000, "calls answered");
      const holderGone = await takeOver(b.workerId, async () => holder.child.kill("SIGKILL"));
      holderTakenOver();
      const reserverGone = await takeOver(c.workerId, async () => {
        reserver.child.kill("SIGUSR2");
        await reserver.exited;
      });
      return [holderGone, reserverGone];
    };

    const [takeovers] = await Promise.all([kills(), tag(), ...Array.from({ length: SENDERS }, send)]);
    const lastCall = Date.now();
    expect(alive(holder)).toBe(false);
    expect(reserver.child.signalCode).toBe("SIGKILL");
    for (const ms of takeovers) expect(ms, "ms from a kill to another worker's lease").toBeLessThan(12_000);

    const queues = a.database.db.collection<{ seq: number; applied: number }>("event_queues");
    const drained = async () => (await queues.find({}).toArray()).every((q) => q.applied >= q.seq);
    await pollUntil(drained, 60_000, "every queue applied");
    expect(Date.now() - lastCall).toBeLessThan(60_000);

    const days = times.map((t) => t.day);
    const range = { from: days[0], to: days[2] };
    for (const game of projects) {
      expect(game.raw.length).toBeGreaterThan(0);
      const trends = await a.postOk("/v1/events/trends", range, game.privateKey);
      expect(byName(trends)).toEqual(bruteForce(game.raw, days));
      const vip = await a.postOk("/v1/events/trends", { ...range, tags: ["vip"] }, game.privateKey);
      expect(byName(vip)).toEqual(
        bruteForce(
          game.raw.filter((e) => game.vip.has(e.player)),
          days,
        ),
      );
      // Retention and active players depend on who did what on which day only.
      const seen = [...new Map(game.raw.map((e) => [`${e.player}/${e.name}/${e.day}`, e])).values()];
      for (;;) {
        const today = a.clock.now().toISOString().slice(0, 10);
        const kept = await a.postOk("/v1/events/retention", range, game.privateKey);
        const act = await a.postOk("/v1/events/active", range, game.privateKey);
        if (today !== a.clock.now().toISOString().slice(0, 10)) continue;
        expect(kept.series[0].cohorts).toEqual(retention(seen, { ...range, today }));
        expect(act.series[0].points).toEqual(active(seen, range.from, range.to));
        break;
      }
    }
  }, 400_000);
});
