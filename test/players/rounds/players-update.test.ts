import { create } from "@bufbuild/protobuf";
import { ListValueSchema, ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlayerService } from "../../../gen/platformapi/v1/players_pb.js";
import { startTestService, type TestService } from "../../support/service/service.js";

let svc: TestService;
let key: string;
let readKey: string;
let publicKey: string;
let n = 0;
const player = () => `player-${++n}`;

async function update(players: unknown[], apiKey = key) {
  return svc.postJson("/v1/players/update", { players }, apiKey);
}

async function getPlayer(partnerUserId: string, apiKey = readKey) {
  const res = await svc.postJson("/v1/players/get", { partner_user_id: partnerUserId }, apiKey);
  expect(res.status).toBe(200);
  return res.body;
}

beforeAll(async () => {
  svc = await startTestService();
  const project = await svc.createProject();
  // The answers below show the player's data, which the public key is not told (players-public-key.test.ts).
  key = project.privateKey;
  readKey = project.privateKey;
  publicKey = project.publicKey;
});
afterAll(() => svc.stop());

describe("players/update over /v1 JSON", () => {
  it('treats "Team A", "team a" and "team_a" as one tag and keeps the first raw form as its label', async () => {
    const id = player();
    const res = await update([{ partner_user_id: id, tags_add: ["Team A", "team a", " team_a "] }]);
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.rejected).toEqual([]);
    expect(res.body.updated).toHaveLength(1);
    expect(res.body.updated[0]).toMatchObject({
      identity_key: `u:${id}`,
      partner_user_id: id,
      linked: false,
      tags: ["team_a"],
      dropped: [],
    });
    expect(Date.parse(res.body.server_time)).toBeGreaterThan(0);

    const tags = await svc.postJson("/v1/players/tags", { page: 1, text: "team_a" }, readKey);
    expect(tags.body.tags).toHaveLength(1);
    expect(tags.body.tags[0]).toMatchObject({ tag: "team_a", label: "Team A", players_count: 1, is_hidden: false });
  });

  it("labels a new tag with the first raw form an entry adds, not one an earlier entry removes", async () => {
    const res = await update([
      { partner_user_id: player(), tags_remove: ["LABEL FROM REMOVAL"] },
      { partner_user_id: player(), tags_add: ["Label From Removal"] },
    ]);
    expect(res.status).toBe(200);
    const tags = await svc.postJson("/v1/players/tags", { page: 1, text: "label_from_removal" }, readKey);
    expect(tags.body.tags).toHaveLength(1);
    expect(tags.body.tags[0]).toMatchObject({ tag: "label_from_removal", label: "Label From Removal" });
  });

  it("drops a tag with disallowed punctuation and a _key trait, lists them, and applies the rest", async () => {
    const id = player();
    const res = await update([
      {
        partner_user_id: id,
        tags_add: ["vip!", "whale"],
        traits: { _key: 1, level: 3, "a.b": 1, $gt: "x", nested: { $gt: "" }, name: "Ann" },
      },
    ]);
    expect(res.status).toBe(200);
    const updated = res.body.updated[0];
    expect(updated.tags).toEqual(["whale"]);
    expect(updated.dropped).toEqual(
      expect.arrayContaining([
        { field: "tags_add", item: "vip!", reason: "invalid_characters" },
        { field: "traits", item: "_key", reason: "reserved_prefix" },
        { field: "traits", item: "a.b", reason: "invalid_characters" },
        { field: "traits", item: "$gt", reason: "reserved_prefix" },
        { field: "traits", item: "nested", reason: "invalid_value" },
      ]),
    );
    expect(updated.dropped).toHaveLength(5);
    const { profile } = await getPlayer(id);
    expect(profile.traits).toEqual({ level: 3, name: "Ann" });
  });

  it("tags replaces the list, tags_add and tags_remove edit it, and an empty tags list clears it", async () => {
    const id = player();
    await update([{ partner_user_id: id, tags_add: ["a", "b"] }]);
    let res = await update([{ partner_user_id: id, tags: ["c", "d"], tags_add: ["e"], tags_remove: ["d"] }]);
    expect(res.body.updated[0].tags).toEqual(["c", "e"]);
    res = await update([{ partner_user_id: id, tags_add: ["f"], tags_remove: ["c"] }]);
    expect(res.body.updated[0].tags).toEqual(["e", "f"]);
    res = await update([{ partner_user_id: id, tags: [1, "g", null] }]);
    expect(res.body.updated[0].tags).toEqual(["g"]);
    expect(res.body.updated[0].dropped).toEqual([
      { field: "tags", item: "1", reason: "not_a_string" },
      { field: "tags", item: "null", reason: "not_a_string" },
    ]);
    res = await update([{ partner_user_id: id, tags: [] }]);
    expect(res.body.updated[0].tags).toEqual([]);
    expect((await getPlayer(id)).profile.tags).toEqual([]);
  });

  it("traits merges only the keys sent, traits_once never overwrites, traits_increment adds, traits_unset removes", async () => {
    const id = player();
    await update([{ partner_user_id: id, traits: { level: 1, name: "Ann", vip: true } }]);
    await update([{ partner_user_id: id, traits: { level: 2 }, traits_once: { name: "Bob", region: "eu" } }]);
    let { profile } = await getPlayer(id);
    expect(profile.traits).toEqual({ level: 2, name: "Ann", vip: true, region: "eu" });

    const res = await update([
      { partner_user_id: id, traits_increment: { level: 5, coins: 2.5, name: 1 }, traits_unset: ["vip", "_x"] },
    ]);
    expect(res.body.updated[0].dropped).toEqual([
      { field: "traits_increment", item: "name", reason: "not_a_number" },
      { field: "traits_unset", item: "_x", reason: "reserved_prefix" },
    ]);
    ({ profile } = await getPlayer(id));
    expect(profile.traits).toEqual({ level: 7, name: "Ann", region: "eu", coins: 2.5 });
  });

  it("applies the operations of one entry in the documented order", async () => {
    const id = player();
    const res = await update([
      {
        partner_user_id: id,
        tags: ["x"],
        tags_add: ["y"],
        tags_remove: ["x"],
        traits: { score: 1 },
        traits_once: { score: 100 },
        traits_increment: { score: 1 },
        traits_unset: [],
      },
    ]);
    expect(res.body.updated[0].tags).toEqual(["y"]);
    expect((await getPlayer(id)).profile.traits).toEqual({ score: 2 });
  });

  it("keeps values exactly as sent and drops over-long strings and non-finite increments", async () => {
    const id = player();
    const res = await update([
      {
        partner_user_id: id,
        traits: { Name: "  Mixed Case  ", long: "x".repeat(1025) },
        traits_increment: { n: "NaN" },
      },
    ]);
    expect(res.body.updated[0].dropped).toEqual([
      { field: "traits", item: "long", reason: "value_too_long" },
      { field: "traits_increment", item: "n", reason: "not_finite" },
    ]);
    expect((await getPlayer(id)).profile.traits).toEqual({ Name: "  Mixed Case  " });
  });

  it("rejects an entry without identity with missing_identity and applies the others", async () => {
    const id = player();
    const res = await update([{ tags_add: ["lost"] }, { partner_user_id: id, tags_add: ["kept"] }]);
    expect(res.status).toBe(200);
    expect(res.body.rejected).toEqual([
      { index: 0, partner_user_id: null, device_id: null, code: "missing_identity", message: expect.any(String) },
    ]);
    expect(res.body.updated.map((u: any) => u.identity_key)).toEqual([`u:${id}`]);
  });

  it("fails a call of 101 entries with 400 naming players, and writes nothing", async () => {
    const entries = Array.from({ length: 101 }, (_, i) => ({ partner_user_id: `bulk-${i}`, tags_add: ["bulk"] }));
    const res = await update(entries);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_argument");
    expect(res.body.message).toMatch(/^players/);
    expect((await getPlayer("bulk-0")).found).toBe(false);
    const ok = await update(entries.slice(0, 100));
    expect(ok.body.updated).toHaveLength(100);
  });

  it("writes immediately: a device-only player is readable right after, with found:false for an unknown one", async () => {
    const device = `dev-${player()}`;
    const res = await update([{ device_id: device, tags_add: ["guest"] }]);
    expect(res.body.updated[0]).toMatchObject({ identity_key: `d:${device}`, device_id: device, tags: ["guest"] });
    expect(res.body.updated[0].partner_user_id).toBeNull();
    const got = await svc.postJson("/v1/players/get", { device_id: device }, readKey);
    expect(got.body).toMatchObject({
      found: true,
      profile: { identity_key: `d:${device}`, tags: ["guest"], linked: false },
    });
    expect(got.body.profile.first_seen_at).toBe(got.body.profile.last_seen_at);
    const unknown = await svc.postJson("/v1/players/get", { partner_user_id: "nobody" }, readKey);
    expect(unknown).toMatchObject({ status: 200, body: { found: false } });
    expect(unknown.body.profile).toBeNull();
    const both = await svc.postJson("/v1/players/get", { partner_user_id: "a", device_id: "b" }, readKey);
    expect(both.status).toBe(400);
    const none = await svc.postJson("/v1/players/get", {}, readKey);
    expect(none.status).toBe(400);
  });

  it("creates no profile for an entry that changes nothing, yet links its device", async () => {
    const [bare, cleared, dropped, linked] = [player(), player(), player(), player()];
    const device = `dev-${linked}`;
    const res = await update([
      { partner_user_id: bare },
      { partner_user_id: cleared, tags: [], tags_remove: ["x"], traits_unset: ["level"] },
      { partner_user_id: dropped, tags_add: ["_hidden"] },
      { partner_user_id: linked, device_id: device },
    ]);
    expect(res.body.rejected).toEqual([]);
    expect(res.body.updated.map((u: { identity_key: string; tags: string[] }) => [u.identity_key, u.tags])).toEqual(
      [bare, cleared, dropped, linked].map((id) => [`u:${id}`, []]),
    );
    expect(res.body.updated[2].dropped).toEqual([{ field: "tags_add", item: "_hidden", reason: "reserved_prefix" }]);
    for (const id of [bare, cleared, dropped, linked])
      expect(await getPlayer(id)).toEqual({ found: false, profile: null });
    const search = await svc.postJson("/v1/players/search", { page: 1 }, readKey);
    const keys = search.body.players.map((p: { identity_key: string }) => p.identity_key);
    for (const id of [bare, cleared, dropped, linked]) expect(keys).not.toContain(`u:${id}`);

    const viaDevice = await update([{ device_id: device, tags_add: ["seen"] }]);
    expect(viaDevice.body.updated[0]).toMatchObject({ identity_key: `u:${linked}`, tags: ["seen"] });
    expect((await getPlayer(linked)).profile.tags).toEqual(["seen"]);
  });

  it("moves last_seen_at on each write and keeps first_seen_at", async () => {
    const id = player();
    await update([{ partner_user_id: id, tags_add: ["t1"] }]);
    const first = (await getPlayer(id)).profile;
    svc.clock.advance(60_000);
    await update([{ partner_user_id: id, tags_add: ["t2"] }]);
    const second = (await getPlayer(id)).profile;
    expect(second.first_seen_at).toBe(first.first_seen_at);
    expect(Date.parse(second.last_seen_at) - Date.parse(first.last_seen_at)).toBeGreaterThanOrEqual(60_000);
  });

  it("needs events:write to update and events:read to get", async () => {
    const platform = await svc.createKey("platform");
    expect((await update([{ partner_user_id: "x", tags_add: ["a"] }], platform.key)).status).toBe(403);
    expect((await update([{ partner_user_id: "x", tags_add: ["a"] }], publicKey)).status).toBe(200);
    const publicGet = await svc.postJson("/v1/players/get", { partner_user_id: "x" }, publicKey);
    expect(publicGet.status).toBe(403);
    expect((await update([{ partner_user_id: "x" }], "nope")).status).toBe(401);
  });

  it("treats hostile strings as plain data", async () => {
    const id = player();
    const res = await update([
      { partner_user_id: id, traits: { q: { $gt: "" }, s: "$gt", r: ".*" }, tags_add: ["$where", "a.b:c-d"] },
    ]);
    expect(res.body.updated[0].tags).toEqual(["a.b:c-d"]);
    expect((await getPlayer(id)).profile.traits).toEqual({ s: "$gt", r: ".*" });
    // A partner id that looks like an operator is just an id.
    const weird = await update([{ partner_user_id: '{"$gt":""}', tags_add: ["weird"] }]);
    expect(weird.body.updated[0].identity_key).toBe('u:{"$gt":""}');
    const search = await svc.postJson("/v1/players/search", { traits: { s: "$gt" } }, readKey);
    expect(search.body.players.map((p: any) => p.identity_key)).toEqual([`u:${id}`]);
  });
});

describe("player limits", () => {
  it("rejects only the entry that would give a player 51 tags or 51 traits", async () => {
    const id = player();
    const fifty = Array.from({ length: 50 }, (_, i) => `lim${i}`);
    const traits = Object.fromEntries(fifty.map((k) => [k, 1]));
    let res = await update([{ partner_user_id: id, tags: fifty, traits }]);
    expect(res.body.updated[0].tags).toHaveLength(50);

    const other = player();
    res = await update([
      { partner_user_id: id, tags_add: ["one_more"] },
      { partner_user_id: other, tags_add: ["fine"] },
      { partner_user_id: id, traits: { extra: 1 } },
      {
        partner_user_id: id,
        tags_add: ["one_more"],
        tags_remove: ["lim0"],
        traits: { extra: 1 },
        traits_unset: ["lim0"],
      },
    ]);
    expect(res.body.rejected).toEqual([
      { index: 0, partner_user_id: id, device_id: null, code: "player_tag_limit", message: expect.any(String) },
      { index: 2, partner_user_id: id, device_id: null, code: "player_trait_limit", message: expect.any(String) },
    ]);
    expect(res.body.updated.map((u: any) => u.identity_key)).toEqual([`u:${other}`, `u:${id}`]);
    const { profile } = await getPlayer(id);
    expect(profile.tags).toHaveLength(50);
    expect(profile.tags).toContain("one_more");
    expect(profile.tags).not.toContain("lim0");
    expect(Object.keys(profile.traits)).toHaveLength(50);
    expect(profile.traits.extra).toBe(1);
  });
});

describe("players/update over gRPC", () => {
  it("applies entries, distinguishes absent from empty tags, and refuses 101 entries", async () => {
    const client = svc.client(PlayerService, "grpc");
    const headers = { "x-api-key": key };
    const id = player();
    const first = await client.update(
      {
        players: [
          {
            partnerUserId: id,
            tagsAdd: ["Team B", "bad tag!"],
            traits: { level: 4, _hidden: 1 },
            traitsIncrement: { coins: 3 },
          },
        ],
      },
      { headers },
    );
    expect(first.success).toBe(true);
    expect(first.updated[0].tags).toEqual(["team_b"]);
    expect(first.updated[0].dropped.map((d) => d.item)).toEqual(["bad tag!", "_hidden"]);

    const kept = await client.update({ players: [{ partnerUserId: id, traitsIncrement: { coins: 1 } }] }, { headers });
    expect(kept.updated[0].tags).toEqual(["team_b"]);
    const emptyList = create(ListValueSchema, { values: [] });
    const cleared = await client.update({ players: [{ partnerUserId: id, tags: emptyList }] }, { headers });
    expect(cleared.updated[0].tags).toEqual([]);
    const numberTag = create(ListValueSchema, {
      values: [create(ValueSchema, { kind: { case: "numberValue", value: 7 } })],
    });
    const dropped = await client.update({ players: [{ partnerUserId: id, tags: numberTag }] }, { headers });
    expect(dropped.updated[0].dropped).toEqual([
      expect.objectContaining({ field: "tags", item: "7", reason: "not_a_string" }),
    ]);

    const got = await client.get({ partnerUserId: id }, { headers: { "x-api-key": readKey } });
    expect(got.profile?.traits).toEqual({ level: 4, coins: 4 });

    const tooMany = client.update(
      { players: Array.from({ length: 101 }, (_, i) => ({ partnerUserId: `g${i}` })) },
      { headers },
    );
    await expect(tooMany).rejects.toSatisfy(
      (error: unknown) => error instanceof ConnectError && error.code === Code.InvalidArgument,
    );

    const rejected = await client.update({ players: [{ tagsAdd: ["x"] }] }, { headers });
    expect(rejected.rejected[0]).toMatchObject({ index: 0, code: "missing_identity" });
  });
});

describe("tenancy", () => {
  it("another project's key sees none of it", async () => {
    const id = player();
    await update([{ partner_user_id: id, tags_add: ["secret_tag"], traits: { secret: 1 } }]);
    const other = await svc.createProject("Other");
    const got = await svc.postJson("/v1/players/get", { partner_user_id: id }, other.privateKey);
    expect(got.body.found).toBe(false);
    const search = await svc.postJson("/v1/players/search", { tags: ["secret_tag"] }, other.privateKey);
    expect(search.body.players).toEqual([]);
    expect(search.body.players_info).toEqual({ total: 0, pages: 0, page: 1 });
    const tags = await svc.postJson("/v1/players/tags", { page: 1 }, other.privateKey);
    expect(tags.body.tags).toEqual([]);
    expect(tags.body.tags_info.total).toBe(0);
    // The same identity in the other project is a different player.
    const res = await update([{ partner_user_id: id, tags_add: ["mine"] }], other.privateKey);
    expect(res.body.updated[0].tags).toEqual(["mine"]);
    expect((await getPlayer(id)).profile.tags).toEqual(["secret_tag"]);
  });
});
