import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { commandsOf } from "../../support/commands.js";
import { needsOwner } from "../../../src/db/engine.js";
import { eventTimes, waitFor } from "../../support/service/events.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

/**
 * Commands per request once a first read of the same filter cached the sets it read: the same however many players
 * the cohort holds (the sets' chunks hold 65,536 players each). A trends read reads the project's queue state (its lag
 * and complete_through); the sole writer of an embedded database knows every set it cached is current, so that is all,
 * and a search reads nothing (the profiles of its page are cached too). Elsewhere another instance may have written
 * since: each set is read again (one `find` of player_sets for the tags a filter unions or intersects, one more for
 * tags_none; a trait's column in player_trait_columns; the days' index and the day's activity chunk), the project's
 * count of player numbers (which chunks exist) before each, and a search's page of profiles.
 */
const TRENDS = { embedded: 1, mongodb: { all: 7, any: 7, trait: 8, none: 9 } };
const SEARCH = { embedded: 0, mongodb: { one: 7, all: 7, trait: 8 } };

describe("database commands of cohort reads", () => {
  it("trends with two tags, and search by tags and a trait, read as many commands as their sets for a 200-player cohort", async () => {
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
    // The same database started again with its worker off: no idle pass of the worker falls in a count.
    const first = svc;
    await first.service.close(1_000);
    await first.database.close();
    svc = await startTestService({ EVENT_WORKER: "off", DB_NAME: first.config.dbName });

    const mongodb = !needsOwner(svc.database);
    const requests: [string, string, object, number][] = [
      ["trends, two tags all", "/v1/events/trends", twoTags, mongodb ? TRENDS.mongodb.all : TRENDS.embedded],
      [
        "trends, two tags any",
        "/v1/events/trends",
        { ...range, tags: ["both", "some"] },
        mongodb ? TRENDS.mongodb.any : TRENDS.embedded,
      ],
      [
        "trends, a tag and a trait",
        "/v1/events/trends",
        { ...range, tags: ["both"], traits: { tier: "gold" } },
        mongodb ? TRENDS.mongodb.trait : TRENDS.embedded,
      ],
      [
        "trends, a tag and tags_none",
        "/v1/events/trends",
        { ...range, tags: ["both"], tags_none: ["some"] },
        mongodb ? TRENDS.mongodb.none : TRENDS.embedded,
      ],
      ["search, one tag", "/v1/players/search", { tags: ["both"] }, mongodb ? SEARCH.mongodb.one : SEARCH.embedded],
      [
        "search, two tags all",
        "/v1/players/search",
        { tags: ["both", "some"], tags_match: "all" },
        mongodb ? SEARCH.mongodb.all : SEARCH.embedded,
      ],
      [
        "search, a tag and a trait",
        "/v1/players/search",
        { tags: ["both"], traits: { tier: "gold" } },
        mongodb ? SEARCH.mongodb.trait : SEARCH.embedded,
      ],
    ];
    for (const [label, path, body, expected] of requests) {
      await post(path, body);
      // An API key's lookup falls in a count only when its cache lapsed: it is no command of the read.
      // With the worker off, every read of the queues is the read's own (its freshness): counted.
      const commands = (await commandsOf(svc.database.client, () => post(path, body), { background: true })).filter(
        (command) => command !== "find api_keys",
      );
      expect.soft(commands.length, `${label}: ${commands.join(", ")}`).toBe(expected);
    }
  });
});
