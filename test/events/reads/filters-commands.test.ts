import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { commandsOf } from "../../support/commands.js";
import { eventTimes, waitFor } from "../../support/service/events.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

/** Budgets per request (docs/database.md, "Cohort reads"): the same however many players the cohort holds. */
const TRENDS_TWO_TAGS = 25;
const SEARCH = 3;

describe("database commands of cohort reads", () => {
  it("trends with two tags, and search by tags and a trait, stay within their budgets for a 200-player cohort", async () => {
    const { publicKey, privateKey } = await svc.createProject();
    const post = (path: string, body: object, key = privateKey) => svc.postOk(path, body, key);
    // 400 players: "both" (every 2nd) is 200 of them, "some" every 4th; "tier" gold on every 3rd.
    const players = Array.from({ length: 400 }, (_, i) => ({
      partner_user_id: `p${i}`,
      tags: [...(i % 2 === 0 ? ["both"] : []), ...(i % 4 === 0 ? ["some"] : []), "all_of_them"],
      traits: { tier: i % 3 === 0 ? "gold" : "free" },
    }));
    for (let from = 0; from < players.length; from += 100) {
      await post("/v1/players/update", { players: players.slice(from, from + 100) }, publicKey);
    }
    const times = eventTimes(svc, 2);
    const days = times.map((time) => time.day);
    const events = players.flatMap((pl, i) =>
      times.slice(i % 2).map(({ timestamp }) => ({ name: "play", partner_user_id: pl.partner_user_id, timestamp })),
    );
    for (let from = 0; from < events.length; from += 1000) {
      await post("/v1/events", { events: events.slice(from, from + 1000) }, publicKey);
    }
    const range = { from: days[0], to: days[1] };
    const twoTags = { ...range, tags: ["both", "all_of_them"], tags_match: "all" };
    const played = (body: { series: { points: { events: number }[] }[] }) =>
      body.series.flatMap((s) => s.points).reduce((sum, point) => sum + point.events, 0);
    // 200 players, events on both days for every 2nd of them... all even: both days.
    await waitFor(
      () => post("/v1/events/trends", twoTags),
      (body) => played(body) === 400,
    );

    const requests: [string, string, object, number][] = [
      ["trends, two tags all", "/v1/events/trends", twoTags, TRENDS_TWO_TAGS],
      ["trends, two tags any", "/v1/events/trends", { ...range, tags: ["both", "some"] }, TRENDS_TWO_TAGS],
      [
        "trends, a tag and a trait",
        "/v1/events/trends",
        { ...range, tags: ["both"], traits: { tier: "gold" } },
        TRENDS_TWO_TAGS,
      ],
      [
        "trends, a tag and tags_none",
        "/v1/events/trends",
        { ...range, tags: ["both"], tags_none: ["some"] },
        TRENDS_TWO_TAGS,
      ],
    ];
    // The owner's memory answers search on the embedded engine; on MongoDB the profiles' indexes do (a page, a count).
    requests.push(
      ["search, one tag", "/v1/players/search", { tags: ["both"] }, SEARCH],
      ["search, two tags all", "/v1/players/search", { tags: ["both", "some"], tags_match: "all" }, SEARCH],
      ["search, a tag and a trait", "/v1/players/search", { tags: ["both"], traits: { tier: "gold" } }, SEARCH],
    );
    for (const [label, path, body, budget] of requests) {
      // The first read of a project fills the owner's memory; the budget is for every read after it.
      await post(path, body);
      const commands = await commandsOf(svc.database.client, () => post(path, body));
      expect(commands.length, `${label}: ${commands.join(", ")}`).toBeLessThanOrEqual(budget);
    }
  });
});
