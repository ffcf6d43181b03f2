import type { CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { READS_IN_FLIGHT } from "../../../src/db/gate.js";
import { startTestService, type TestService } from "../../support/service/service.js";

let svc: TestService;
let writeKey: string;
let readKey: string;

const post = (path: string, body: unknown, key = readKey) => svc.postJson(path, body, key);
const update = (players: unknown[]) => post("/v1/players/update", { players }, writeKey);
const search = async (body: object) => {
  const res = await post("/v1/players/search", body);
  expect(res.status).toBe(200);
  return res.body;
};
const ids = (body: any) => body.players.map((p: any) => p.partner_user_id);

beforeAll(async () => {
  svc = await startTestService();
  const project = await svc.createProject();
  writeKey = project.publicKey;
  readKey = project.privateKey;
  // Written a second apart, newest last: search answers by identity_key, whatever the write order.
  for (const [id, tags, traits] of [
    ["p3", ["vip"], { level: 7, region: "eu" }],
    ["p1", ["Team A", "vip"], { level: 5, region: "eu" }],
    ["p4", ["other"], { level: "5", region: "eu" }],
    ["p2", ["team_a"], { level: 5, region: "us" }],
  ] as const) {
    svc.clock.advance(1_000);
    await update([{ partner_user_id: id, tags, traits }]);
  }
});
afterAll(() => svc.stop());

describe("players/search", () => {
  it("matches any listed tag by default and all of them with tags_match all, normalising filter tags", async () => {
    expect(ids(await search({ tags: ["Team A", "VIP"] }))).toEqual(["p1", "p2", "p3"]);
    expect(ids(await search({ tags: ["team a", "vip"], tags_match: "any" }))).toEqual(["p1", "p2", "p3"]);
    expect(ids(await search({ tags: ["Team A", "vip"], tags_match: "all" }))).toEqual(["p1"]);
    expect(ids(await search({}))).toEqual(["p1", "p2", "p3", "p4"]);
  });

  it('ANDs traits with exact value matches (5 is not "5")', async () => {
    expect(ids(await search({ traits: { level: 5 } }))).toEqual(["p1", "p2"]);
    expect(ids(await search({ traits: { level: 5, region: "eu" } }))).toEqual(["p1"]);
    expect(ids(await search({ traits: { level: "5" } }))).toEqual(["p4"]);
    expect(ids(await search({ tags: ["vip"], traits: { region: "eu" } }))).toEqual(["p1", "p3"]);
  });

  it("by a tag and a trait, follows the writes after an earlier search (the holders of a value kept in memory)", async () => {
    const { publicKey, privateKey } = await svc.createProject();
    const write = (players: object[]) => svc.postOk("/v1/players/update", { players }, publicKey);
    const find = async () =>
      ids(await svc.postOk("/v1/players/search", { tags: ["vip"], traits: { region: "eu" } }, privateKey));
    await write([
      { partner_user_id: "a", tags: ["vip"], traits: { region: "eu" } },
      { partner_user_id: "b", tags: ["vip"], traits: { region: "us" } },
    ]);
    expect(await find()).toEqual(["a"]);
    await write([
      { partner_user_id: "a", traits: { region: "us" } },
      { partner_user_id: "b", traits: { region: "eu" } },
      { partner_user_id: "c", tags: ["vip"], traits: { region: "eu" } },
    ]);
    expect(await find()).toEqual(["b", "c"]);
  });

  it("pages from 1 with players_info, by identity_key ascending", async () => {
    const first = await search({ page_size: 3 });
    expect(ids(first)).toEqual(["p1", "p2", "p3"]);
    expect(first.players_info).toEqual({ total: 4, pages: 2, page: 1 });
    const second = await search({ page: 2, page_size: 3 });
    expect(ids(second)).toEqual(["p4"]);
    expect(second.players_info).toEqual({ total: 4, pages: 2, page: 2 });
    const beyond = await search({ page: 3, page_size: 3 });
    expect(beyond.players).toEqual([]);
    expect(second.players[0]).toMatchObject({
      identity_key: "u:p4",
      tags: ["other"],
      traits: { level: "5", region: "eu" },
      linked: false,
    });
  });

  it("refuses bad paging, an unknown tags_match and unnormalisable filters with 400", async () => {
    for (const body of [
      { page_size: 101 },
      { page: -1 },
      { tags_match: "some" },
      { tags: ["bad!"] },
      { traits: { "a.b": 1 } },
      { traits: { x: { $gt: "" } } },
    ]) {
      const res = await post("/v1/players/search", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe("invalid_argument");
    }
  });

  it("refuses more than 50 tags or 50 traits with 400 naming the field, and takes 50 of each", async () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`);
    const tags = await post("/v1/players/search", { tags: many(51) });
    expect(tags.status).toBe(400);
    expect(tags.body.code).toBe("invalid_argument");
    expect(tags.body.message).toMatch(/tags/);
    const traits = await post("/v1/players/search", { traits: Object.fromEntries(many(51).map((k) => [k, 1])) });
    expect(traits.status).toBe(400);
    expect(traits.body.message).toMatch(/traits/);
    expect(ids(await search({ tags: [...many(49), "vip"] }))).toEqual(["p1", "p3"]);
    expect(ids(await search({ traits: Object.fromEntries(many(50).map((k) => [k, 1])) }))).toEqual([]);
  });

  it("reads a many-tag search's sets side by side at most READS_IN_FLIGHT at a time (one $in on MongoDB)", async () => {
    const bare = await startTestService();
    const project = await bare.createProject();
    await bare.postJson(
      "/v1/players/update",
      {
        players: [
          { partner_user_id: "p1", tags: ["vip"] },
          { partner_user_id: "p3", tags: ["vip"] },
        ],
      },
      project.publicKey,
    );
    const inFlight = new Set<number>();
    let most = 0;
    const started = (event: CommandStartedEvent) => {
      if (event.commandName !== "find" || event.command.find !== "player_sets") return;
      inFlight.add(event.requestId);
      most = Math.max(most, inFlight.size);
    };
    const ended = (event: CommandSucceededEvent | CommandFailedEvent) => inFlight.delete(event.requestId);
    const client = bare.database.client;
    client.on("commandStarted", started);
    client.on("commandSucceeded", ended);
    client.on("commandFailed", ended);
    try {
      const tags = Array.from({ length: 50 }, (_, i) => `t${i}`);
      const res = await bare.postJson("/v1/players/search", { tags: [...tags.slice(1), "vip"] }, project.privateKey);
      expect(ids(res.body)).toEqual(["p1", "p3"]);
    } finally {
      client.off("commandStarted", started);
      client.off("commandSucceeded", ended);
      client.off("commandFailed", ended);
      await bare.stop();
    }
    // On FerretDB point reads side by side (`$in` scans there); on MongoDB one `$in` of every chunk.
    if (!bare.database.isFerretDb) expect(most).toBe(1);
    else {
      expect(most).toBeGreaterThan(1);
      expect(most).toBeLessThanOrEqual(READS_IN_FLIGHT);
    }
  });

  it("needs events:read", async () => {
    expect((await post("/v1/players/search", {}, writeKey)).status).toBe(403);
  });
});

describe("players/tags", () => {
  it("lists every tag with its record and counts maintained on adds and removes", async () => {
    const res = await post("/v1/players/tags", { page: 1 });
    expect(res.status).toBe(200);
    expect(res.body.tags.map((t: any) => [t.id, t.tag, t.label, t.players_count])).toEqual([
      [1, "vip", "vip", 2],
      [2, "team_a", "Team A", 2],
      [3, "other", "other", 1],
    ]);
    expect(res.body.tags_info).toEqual({ total: 3, pages: 1, page: 1 });
    expect(res.body.categories).toEqual([]);
    const vip = res.body.tags[0];
    expect(vip).toMatchObject({ is_hidden: false });
    expect(vip.category).toBeNull();
    expect(Date.parse(vip.last_seen_at)).toBeGreaterThan(Date.parse(vip.first_seen_at));

    await update([
      { partner_user_id: "p1", tags_remove: ["vip"] },
      { partner_user_id: "p5", tags_add: ["vip", "new_one"] },
    ]);
    // Search follows the same membership: p1 left vip, p5 joined it.
    expect(ids(await search({ tags: ["vip"] }))).toEqual(["p3", "p5"]);
    const after = await post("/v1/players/tags", { page: 1 });
    expect(Object.fromEntries(after.body.tags.map((t: any) => [t.tag, t.players_count]))).toEqual({
      team_a: 2,
      vip: 2,
      other: 1,
      new_one: 1,
    });
  });

  it("filters by text (case-insensitive, tag or label, regex characters literal) and by category", async () => {
    await update([{ partner_user_id: "p6", tags_add: ["Season.1", "season-2"] }]);
    expect((await post("/v1/players/tags/update", { tag: "season.1", label: "Season 1" })).status).toBe(200);
    let set = await post("/v1/players/tags/update", {
      tag: "season.1",
      category: "Seasons",
      description: "First season",
      label: "Season One",
    });
    expect(set.status).toBe(200);
    expect(set.body.tag).toMatchObject({
      tag: "season.1",
      label: "Season One",
      category: "Seasons",
      description: "First season",
    });
    set = await post("/v1/players/tags/update", { tag: "Season-2", category: "Seasons", is_hidden: true });
    expect(set.body.tag).toMatchObject({ tag: "season-2", label: "season-2", category: "Seasons", is_hidden: true });

    const byText = async (text: string) =>
      (await post("/v1/players/tags", { page: 1, text })).body.tags.map((t: any) => t.tag);
    expect(await byText("SEASON")).toEqual(["season.1", "season-2"]);
    expect(await byText("SON ON")).toEqual(["season.1"]);
    expect(await byText("n.1")).toEqual(["season.1"]);
    expect(await byText(".*")).toEqual([]);
    expect(await byText("(")).toEqual([]);
    expect(await byText("[a-z]+")).toEqual([]);

    const seasons = await post("/v1/players/tags", { page: 1, category: "Seasons" });
    expect(seasons.body.tags.map((t: any) => t.tag)).toEqual(["season.1", "season-2"]);
    expect(seasons.body.categories).toEqual(["Seasons"]);
    const uncategorised = await post("/v1/players/tags", { page: 1, category: "" });
    expect(uncategorised.body.tags.map((t: any) => t.tag)).not.toContain("season.1");

    // An empty category clears it.
    set = await post("/v1/players/tags/update", { tag: "season-2", category: "" });
    expect(set.body.tag.category).toBeNull();
  });

  it("pages with page_size and refuses page 0 or a page_size over 100", async () => {
    const page = await post("/v1/players/tags", { page: 2, page_size: 2 });
    expect(page.body.tags).toHaveLength(2);
    expect(page.body.tags_info).toMatchObject({ page: 2, pages: Math.ceil(page.body.tags_info.total / 2) });
    // docs/api.md: as in players/search, an absent page means 1 and 0 or below is invalid_argument.
    expect((await post("/v1/players/tags", { page: 0, page_size: 10 })).status).toBe(400);
    const tooBig = await post("/v1/players/tags", { page: 1, page_size: 101 });
    expect(tooBig.status).toBe(400);
    expect(tooBig.body.message).toMatch(/^page_size/);
  });

  it("tags/update answers not_found for an unknown tag and needs players:manage", async () => {
    const res = await post("/v1/players/tags/update", { tag: "never_seen", label: "x" });
    expect(res.status).toBe(404);
    expect((await post("/v1/players/tags/update", { tag: "vip", label: "x" })).status).toBe(200);
    const platform = await svc.createKey("platform");
    expect((await post("/v1/players/tags/update", { tag: "vip", label: "x" }, platform.key)).status).toBe(403);
    expect((await post("/v1/players/tags/update", { tag: "vip", label: " " })).status).toBe(400);
    // Tag metadata changes what every client sees: the public key, shipped in game clients, may not.
    const byPublicKey = await post("/v1/players/tags/update", { tag: "vip", label: "hacked" }, writeKey);
    expect(byPublicKey.status).toBe(403);
    expect(byPublicKey.body).toEqual({
      code: "permission_denied",
      message: "this API key (public) lacks the scope players:manage",
    });
  });

  it("tags/update refuses control characters in a label or category, naming the field, and changes nothing", async () => {
    const before = await post("/v1/players/tags", { page: 1, text: "vip" });
    for (const [field, value] of [
      ["label", "VIP\u0007"],
      ["label", "V\nIP"],
      ["category", "Pay\u0000ers"],
      ["category", "Payers\u0085"],
    ]) {
      const res = await post("/v1/players/tags/update", { tag: "vip", [field]: value }, readKey);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ code: "invalid_argument", message: `${field}: must not contain control characters` });
    }
    expect(await post("/v1/players/tags", { page: 1, text: "vip" })).toMatchObject({ body: before.body });
  });
});
