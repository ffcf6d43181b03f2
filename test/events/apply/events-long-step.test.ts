import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ownerOf } from "../../../src/events/apply/workers.js";
import { DbProxy } from "../../support/db/db-proxy.js";
import { bruteForce, byName, eventTimes, queueOf, waitFor } from "../../support/service/events.js";
import { stepRuns } from "../../support/service/metrics.js";
import { startTestService, type TestService } from "../../support/service/service.js";

/**
 * Two instances on one database behind a proxy that holds one command of a step (a sum's back-fill reading its raw
 * events) past three leases of the worker's (10 s): the step keeps its lease and runs once, and another project of the
 * same worker goes on meanwhile. Two instances: ISOLATION_ONLY in vitest.config.ts.
 */
const LEASE_MS = 10_000;
const HELD_MS = 3 * LEASE_MS + 1_000;
/** Longer than the held command: the driver's socket waits for it (DB_TIMEOUT_MS). */
const ENV = { DB_TIMEOUT_MS: String(HELD_MS + 10_000) };

let proxy: DbProxy;
let a: TestService;
let b: TestService;
beforeAll(async () => {
  proxy = await DbProxy.start(inject("mongodbUri"));
  a = await startTestService(ENV, { mongodbUri: proxy.uri });
  b = await startTestService({ ...ENV, DB_NAME: a.config.dbName }, { mongodbUri: proxy.uri });
});
afterAll(async () => {
  await proxy?.restore();
  await b?.stop();
  await a?.stop();
  proxy?.cut();
});

const workerIds = async () =>
  (await a.database.db.collection<{ _id: string }>("event_workers").find({}).toArray()).map((doc) => doc._id);

describe("a step longer than three leases", () => {
  it("keeps its lease and runs once; another project of the same worker goes on, nothing answers 429", async () => {
    const ids = await waitFor(workerIds, (found) => found.length === 2);
    const summed = await a.createProject();
    // The other project goes to the same worker as the summed one (rendezvous hashing).
    let other = await a.createProject();
    while (ownerOf(other.projectId, ids) !== ownerOf(summed.projectId, ids)) other = await a.createProject();

    const [time] = eventTimes(a, 1);
    const purchases = Array.from({ length: 20 }, (_, i) => ({
      name: "purchase",
      partner_user_id: `p${i % 5}`,
      timestamp: time.timestamp,
      properties: { amount: i + 1 },
    }));
    expect((await a.postOk("/v1/events", { events: purchases }, summed.publicKey)).accepted).toBe(20);
    await waitFor(
      () => queueOf(a),
      (q) => q.queue_depth === 0,
    );

    // The back-fill's read of the summed project's raw events, held past three leases.
    const held = proxy.slowCommands(
      (command) => command.includes("find") && command.includes("event_raw") && command.includes(summed.projectId),
      HELD_MS,
    );
    const startedAt = Date.now();
    const turnedOn = b.postJson(
      "/v1/events/properties/update",
      { name: "purchase", property: "amount", sum: true },
      summed.privateKey,
    );
    const raw: { name: string; player: string; day: string }[] = [];
    const statuses = new Set<number>();
    let maxLag = 0;
    for (let call = 0; Date.now() - startedAt < HELD_MS + 2_000; call++) {
      const events = Array.from({ length: 50 }, (_, i) => {
        const player = `q${(call * 7 + i) % 40}`;
        raw.push({ name: "match", player, day: time.day });
        return { name: "match", partner_user_id: player, timestamp: time.timestamp };
      });
      const res = await [a, b][call % 2].postJson("/v1/events", { events }, other.publicKey);
      statuses.add(res.status);
      maxLag = Math.max(maxLag, res.body.lag_seconds ?? 0);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect([...statuses]).toEqual([200]);
    expect(maxLag).toBeLessThan(5);
    expect((await turnedOn).status).toBe(200);
    expect(Date.now() - startedAt).toBeGreaterThan(HELD_MS);

    // Held once, run once across both instances, and its totals counted once.
    expect(held.seen).toBe(1);
    const steps = await Promise.all([a, b].map((svc) => stepRuns(svc, "apply", "sum_backfill")));
    expect(steps[0] + steps[1]).toBe(1);
    const range = { from: time.day, to: time.day };
    const trends = await a.postOk("/v1/events/trends", { ...range, sum: "amount" }, summed.privateKey);
    expect(trends.series[0].points[0].sum).toBe(purchases.reduce((total, e) => total + e.properties.amount, 0));
    await waitFor(
      () => queueOf(a),
      (q) => q.queue_depth === 0,
    );
    expect(byName(await a.postOk("/v1/events/trends", range, other.privateKey))).toEqual(bruteForce(raw, [time.day]));
  }, 120_000);
});
