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
 * Commands per request of the KPI reads (docs/database.md, "Game KPIs"), once the project's first read filled the
 * owner's memory: the same however many players, as long as a cohort's histories fit one `$in` of 1,000 on MongoDB.
 */
const BUDGETS = {
  // None: the owner's memory holds the profiles and histories (1 for a lookup outside the read, such as an API key's).
  embedded: { retention: 1, retentionSplit: 1, active: 1, activeSplit: 1, weeks: 1 },
  // The changes, then each cohort's members (a find of the profiles by their tag index), then one `$in` of histories.
  mongodb: { retention: 2, retentionSplit: 5, active: 2, activeSplit: 5, weeks: 5 },
};

describe("database commands of the KPI reads", () => {
  it("retention, active players and trends by week, whole and split by tags, within their budgets", async () => {
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
    const range = { from: times[0].day, to: times[2].day };
    const split = { split_by: "tags", tags: ["even", "third", "all_of_them"] };
    const budgets = needsOwner(svc.database) ? BUDGETS.embedded : BUDGETS.mongodb;
    const requests: [keyof typeof budgets, string, object][] = [
      ["retention", "/v1/events/retention", range],
      ["retentionSplit", "/v1/events/retention", { ...range, ...split }],
      ["active", "/v1/events/active", range],
      ["activeSplit", "/v1/events/active", { ...range, ...split }],
      ["weeks", "/v1/events/trends", { ...range, interval: "week", ...split }],
    ];
    for (const [label, path, body] of requests) {
      await post(path, body);
      const commands = await commandsOf(svc.database.client, () => post(path, body));
      expect(commands.length, `${label}: ${commands.join(", ")}`).toBeLessThanOrEqual(budgets[label]);
    }
    const retention = await post("/v1/events/retention", range);
    expect(retention.series[0].cohorts.map((c: { players: number }) => c.players)).toEqual([100, 100, 100]);
  });
});
