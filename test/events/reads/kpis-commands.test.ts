import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { needsOwner } from "../../../src/db/engine.js";
import { commandsOf } from "../../support/commands.js";
import { eventTimes, queueOf, waitFor } from "../../support/service/events.js";
import { startTestService, type TestService } from "../../support/service/service.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

/**
 * Commands per request of the KPI reads, once a first read of the same filter cached the sets it read. Each read reads
 * the project's queue state (its lag and complete_through): `find event_queues`. The sole writer of an embedded
 * database knows every set it cached is current: that is all. Elsewhere another instance may have written since, so
 * the read reads again the days' index and the day's activity chunk (1 + 1), in a split the three tags' sets (3), and
 * the project's count of player numbers (which chunks exist) each time a set's chunks are listed: 2 whole, 7 split.
 * Deterministic: the worker is off while they are counted.
 */
const EXPECTED = {
  embedded: { retention: 1, retentionSplit: 1, active: 1, activeSplit: 1, weeks: 1 },
  mongodb: { retention: 5, retentionSplit: 13, active: 5, activeSplit: 13, weeks: 13 },
};

describe("database commands of the KPI reads", () => {
  it("retention, active players and trends by week, whole and split by tags: as many as their sets", async () => {
    const { publicKey, privateKey } = await svc.createProject();
    const post = (path: string, body: object, key = privateKey) => svc.postOk(path, body, key);
    const players = Array.from({ length: 300 }, (_, i) => ({
      partner_user_id: `p${i}`,
      tags: [...(i % 2 === 0 ? ["even"] : []), ...(i % 3 === 0 ? ["third"] : []), "all_of_them"],
    }));
    for (let from = 0; from < players.length; from += 100) {
      await post("/v1/players/update", { players: players.slice(from, from + 100) }, publicKey);
    }
    const times = eventTimes(svc, 3);
    const events = players.flatMap((pl, i) =>
      times.slice(i % 3).map(({ timestamp }) => ({ name: "play", partner_user_id: pl.partner_user_id, timestamp })),
    );
    for (let from = 0; from < events.length; from += 1000) {
      await post("/v1/events", { events: events.slice(from, from + 1000) }, publicKey);
    }
    await waitFor(
      () => queueOf(svc),
      (q) => q.queue_depth === 0,
    );
    // The same database started again with its worker off: no idle pass of the worker falls in a count.
    const first = svc;
    await first.service.close(1_000);
    await first.database.close();
    svc = await startTestService({ EVENT_WORKER: "off", DB_NAME: first.config.dbName });
    const range = { from: times[0].day, to: times[2].day };
    const split = { split_by: "tags", tags: ["even", "third", "all_of_them"] };
    const expected = needsOwner(svc.database) ? EXPECTED.embedded : EXPECTED.mongodb;
    const requests: [keyof typeof expected, string, object][] = [
      ["retention", "/v1/events/retention", range],
      ["retentionSplit", "/v1/events/retention", { ...range, ...split }],
      ["active", "/v1/events/active", range],
      ["activeSplit", "/v1/events/active", { ...range, ...split }],
      ["weeks", "/v1/events/trends", { ...range, interval: "week", ...split }],
    ];
    for (const [label, path, body] of requests) {
      await post(path, body);
      // An API key's lookup falls in a count only when its cache lapsed: it is no command of the read.
      // With the worker off, every read of the queues is the read's own (its freshness): counted.
      const commands = (await commandsOf(svc.database.client, () => post(path, body), { background: true })).filter(
        (command) => command !== "find api_keys",
      );
      expect.soft(commands.length, `${label}: ${commands.join(", ")}`).toBe(expected[label]);
    }
    const retention = await post("/v1/events/retention", range);
    expect(retention.series[0].cohorts.map((c: { players: number }) => c.players)).toEqual([100, 100, 100]);
  });
});
