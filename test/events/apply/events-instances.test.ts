import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { bruteForce, byName, eventTimes, queueOf, waitFor } from "../../support/service/events.js";

/**
 * Two service instances, each with an apply worker, draining one queue. Needs
 * an engine that isolates updates per document (MongoDB, mongo-java-server):
 * one instance owns a FerretDB database (ISOLATION_ONLY in vitest.config.ts).
 */
let a: TestService;
let b: TestService;
beforeAll(async () => {
  a = await startTestService();
  b = await startTestService({ DB_NAME: a.config.dbName });
});
afterAll(async () => {
  await b?.stop();
  await a?.stop();
});

describe("two instances draining one queue", () => {
  it("apply each event once", async () => {
    const { publicKey, privateKey } = await a.createProject();
    const times = eventTimes(a, 2);
    const days = times.map((t) => t.day);
    const raw: { name: string; player: string; day: string }[] = [];
    const calls = Array.from({ length: 20 }, (_, call) => {
      const events = Array.from({ length: 200 }, (_, i) => {
        const player = `p${(i * 3 + call) % 90}`;
        const { day, timestamp } = times[(i + call) % 2];
        raw.push({ name: "match", player, day });
        return { name: "match", partner_user_id: player, timestamp, event_id: `${call}-${i}` };
      });
      return (call % 2 === 0 ? a : b).postJson("/v1/events", { events }, publicKey);
    });
    // A tag change in the middle of it, through the other instance.
    await b.postJson("/v1/players/update", { players: [{ partner_user_id: "p1", tags_add: ["squad"] }] }, publicKey);
    for (const res of await Promise.all(calls)) expect(res.body.accepted).toBe(200);
    await waitFor(
      () => queueOf(a),
      (q) => q.queue_depth === 0,
      120_000,
    );
    const range = { from: days[0], to: days[1] };
    const all = await b.postJson("/v1/events/trends", range, privateKey);
    expect(byName(all.body)).toEqual(bruteForce(raw, days));
    const squad = await waitFor(
      async () => byName((await a.postJson("/v1/events/trends", { ...range, tags: ["squad"] }, privateKey)).body),
      (got) => got.size > 0,
    );
    expect(squad).toEqual(
      bruteForce(
        raw.filter((e) => e.player === "p1"),
        days,
      ),
    );
  });
});
