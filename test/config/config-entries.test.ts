import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigService } from "../../gen/platformapi/v1/config_pb.js";
import { EntryStore } from "../../src/config/storage/entry-store.js";
import { HeadStore } from "../../src/config/storage/head-store.js";
import { engineOf } from "../../src/db/engine.js";
import { startTestService, type TestService } from "../support/service/service.js";

// Config entries over /v1 (and gRPC): every change a version made by an API key, the history, restore and delete,
// the limits, the scopes, and a second project that sees nothing of the first's.

let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;
let reader: { keyId: string; key: string };
beforeAll(async () => {
  svc = await startTestService();
  project = await svc.createProject("Config Game");
  reader = await svc.createKey("reader", project.projectId);
});
afterAll(() => svc.stop());

const post = (path: string, body: object | string, key = project.privateKey) =>
  svc.postJson(`/v1/config/${path}`, body, key);
const ok = async (path: string, body: object, key = project.privateKey) => {
  const res = await post(path, body, key);
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
};
/** The private key's id, which every version it makes records. */
async function privateKeyId(): Promise<string> {
  const { api_keys } = await svc.postOk("/v1/admin/api_keys/list", { project_id: project.projectId }, ADMIN);
  return api_keys.find((key: { type: string }) => key.type === "private").key_id;
}
const ADMIN = "adm_test_" + "k".repeat(32);

const shopRules = [
  { tags: ["VIP"], tags_match: "any", value: { layout: "gold" } },
  { traits: { tier: "silver" }, rollout_percent: 12.5, value: { layout: "silver" } },
];

describe("config entries", () => {
  it("makes a version at every change, with who and when, and lists the history newest first", async () => {
    const before = svc.clock.now().getTime();
    const created = await ok("update", { key: "shop", default_value: { layout: "plain" }, rules: shopRules });
    expect(created.entry).toEqual({
      key: "shop",
      default_value: { layout: "plain" },
      rules: [
        {
          tags: ["vip"],
          tags_match: "any",
          tags_none: [],
          traits: {},
          rollout_percent: null,
          value: { layout: "gold" },
        },
        {
          tags: [],
          tags_match: "any",
          tags_none: [],
          traits: { tier: "silver" },
          rollout_percent: 12.5,
          value: { layout: "silver" },
        },
      ],
      in_launch: false,
      version: 1,
      updated_at: expect.any(String),
    });
    expect(Date.parse(created.entry.updated_at)).toBeGreaterThanOrEqual(before - 1_000);
    const changed = await ok("update", { key: "shop", default_value: null, in_launch: true });
    expect(changed.entry).toMatchObject({ version: 2, default_value: null, rules: [], in_launch: true });

    const keyId = await privateKeyId();
    const history = await ok("history", { key: "shop" }, reader.key);
    expect(history.versions_info).toEqual({ total: 2, pages: 1, page: 1 });
    expect(history.versions.map((v: { version: number; key_id: string }) => [v.version, v.key_id])).toEqual([
      [2, keyId],
      [1, keyId],
    ]);
    expect(history.versions[1].entry).toEqual(created.entry);
    expect(history.versions[0].entry).toEqual(changed.entry);
  });

  it("restores an earlier version as a new one, deletes as a version, and restores a deleted entry", async () => {
    const restored = await ok("restore", { key: "shop", version: 1 });
    expect(restored.entry).toMatchObject({ version: 3, default_value: { layout: "plain" }, in_launch: false });
    expect(restored.entry.rules).toHaveLength(2);

    expect(await ok("delete", { key: "shop" })).toEqual({ version: 4 });
    expect((await ok("list", {})).entries.map((e: { key: string }) => e.key)).not.toContain("shop");
    const history = await ok("history", { key: "shop", page_size: 2 });
    expect(history.versions_info).toEqual({ total: 4, pages: 2, page: 1 });
    expect(history.versions.map((v: { version: number; entry: unknown }) => [v.version, v.entry])).toEqual([
      [4, null],
      [3, restored.entry],
    ]);
    const second = await ok("history", { key: "shop", page_size: 2, page: 2 });
    expect(second.versions.map((v: { version: number }) => v.version)).toEqual([2, 1]);

    const deleteAgain = await post("delete", { key: "shop" });
    expect(deleteAgain).toMatchObject({ status: 404, body: { code: "not_found" } });
    expect(deleteAgain.body.message).toMatch(/^key: /);
    const restoreDeletion = await post("restore", { key: "shop", version: 4 });
    expect(restoreDeletion.status).toBe(400);
    expect(restoreDeletion.body.message).toMatch(/^version: /);
    const unknownVersion = await post("restore", { key: "shop", version: 9 });
    expect(unknownVersion.status).toBe(404);
    expect(unknownVersion.body.message).toMatch(/^version: /);

    const back = await ok("restore", { key: "shop", version: 2 });
    expect(back.entry).toMatchObject({ key: "shop", version: 5, default_value: null, in_launch: true });
    expect(await ok("history", { key: "never_written" })).toEqual({
      versions: [],
      versions_info: { total: 0, pages: 0, page: 1 },
    });
  });

  it("lists the entries by key, a page at a time, to a reader key; the same over gRPC", async () => {
    for (const key of ["b.key", "a:key", "c-key"]) await ok("update", { key, default_value: key });
    const page = await ok("list", { page: 1, page_size: 2 }, reader.key);
    expect(page.entries_info).toEqual({ total: 4, pages: 2, page: 1 });
    expect(page.entries.map((e: { key: string }) => e.key)).toEqual(["a:key", "b.key"]);
    const rest = await ok("list", { page: 2, page_size: 2 }, reader.key);
    expect(rest.entries.map((e: { key: string }) => e.key)).toEqual(["c-key", "shop"]);

    const grpc = svc.client(ConfigService, "grpc");
    const answer = await grpc.listEntries({ pageSize: 100 }, { headers: { "x-api-key": reader.key } });
    expect(answer.entries.map((e) => e.key)).toEqual(["a:key", "b.key", "c-key", "shop"]);
    expect(answer.entries[0].defaultValue?.kind).toEqual({ case: "stringValue", value: "a:key" });
  });
});

describe("bad input is a 400 naming the field", () => {
  const big = "x".repeat(8 * 1024);
  it.each([
    ["a key outside the key rules", { key: "has space", default_value: 1 }, /^key: /],
    ["an empty key", { key: "", default_value: 1 }, /^key: /],
    ["a key of 65 characters", { key: "k".repeat(65), default_value: 1 }, /^key: /],
    ["no default value", { key: "k" }, /^default_value: /],
    ["a default value over 8 KiB", { key: "k", default_value: big }, /^default_value: at most 8192 bytes/],
    [
      "a rule's value over 8 KiB",
      { key: "k", default_value: 1, rules: [{ value: { v: big } }] },
      /^rules\[0\]\.value: /,
    ],
    ["a rule without a value", { key: "k", default_value: 1, rules: [{ tags: ["a"] }] }, /^rules\[0\]\.value: /],
    [
      "more than 50 rules",
      { key: "k", default_value: 1, rules: Array.from({ length: 51 }, () => ({ value: 1 })) },
      /^rules: /,
    ],
    [
      "a rollout of three decimals",
      { key: "k", default_value: 1, rules: [{ rollout_percent: 12.345, value: 1 }] },
      /^rules\[0\]\.rollout_percent: /,
    ],
    [
      "a rollout over 100",
      { key: "k", default_value: 1, rules: [{ rollout_percent: 100.01, value: 1 }] },
      /^rules\[0\]\.rollout_percent: /,
    ],
    [
      "a malformed tag",
      { key: "k", default_value: 1, rules: [{ value: 1 }, { tags: ["_hidden"], value: 1 }] },
      /^rules\[1\]\.tags: /,
    ],
    [
      "a bad tags_match",
      { key: "k", default_value: 1, rules: [{ tags: ["a"], tags_match: "some", value: 1 }] },
      /^rules\[0\]\.tags_match: /,
    ],
    [
      "a nested trait value",
      { key: "k", default_value: 1, rules: [{ traits: { tier: { a: 1 } }, value: 1 }] },
      /^rules\[0\]\.traits/,
    ],
    // As sent on the wire: a JavaScript literal's __proto__ sets a prototype, which JSON.stringify leaves out.
    ["a __proto__ key in a value", '{"key":"k","default_value":{"a":[{"__proto__":1}]}}', /^default_value: /],
    [
      "a __proto__ key in a rule's value",
      '{"key":"k","default_value":1,"rules":[{"value":{"__proto__":{}}}]}',
      /^rules\[0\]\.value: /,
    ],
  ])("%s", async (_case, body, message) => {
    const res = await post("update", body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_argument");
    expect(res.body.message).toMatch(message);
  });

  it("refuses the 1,001st key of a project, and lets a deleted key's room be used", async () => {
    const { projectId, privateKey } = await svc.createProject("Full Config");
    // 998 entries written as the service writes them, counted one too many in the project's head (as a deletion a crash
    // cut short before its count leaves it), the last two over the API.
    const store = new EntryStore(svc.database.db, engineOf(svc.database));
    const keys = Array.from({ length: 1_000 }, (_, i) => `key_${String(i).padStart(4, "0")}`);
    for (let i = 0; i < 998; i += 50) {
      await Promise.all(
        keys.slice(i, Math.min(i + 50, 998)).map((key) =>
          store.write(projectId, key, 0, {
            entry: { key, defaultValue: i, rules: [], inLaunch: false },
            keyId: "seed",
            at: svc.clock.now(),
          }),
        ),
      );
    }
    await new HeadStore(svc.database.db).advance(projectId, 999);
    for (const key of keys.slice(998)) await ok("update", { key, default_value: 1 }, privateKey);
    const over = await post("update", { key: "one_more", default_value: 1 }, privateKey);
    expect(over.status).toBe(400);
    expect(over.body.message).toMatch(/^key: the project has 1000 config entries/);
    // A change of an existing key is no new key.
    await ok("update", { key: keys[0], default_value: "changed" }, privateKey);
    await ok("delete", { key: keys[1] }, privateKey);
    await ok("update", { key: "one_more", default_value: 1 }, privateKey);
    expect((await ok("list", { page_size: 1 }, privateKey)).entries_info.total).toBe(1_000);
  });
});

describe("keys and projects", () => {
  it("needs players:manage to change and events:read to read; the public key does neither", async () => {
    const refusedChanges = await Promise.all([
      post("update", { key: "k", default_value: 1 }, reader.key),
      post("restore", { key: "shop", version: 1 }, reader.key),
      post("delete", { key: "shop" }, reader.key),
      post("update", { key: "k", default_value: 1 }, project.publicKey),
    ]);
    expect(refusedChanges.map((res) => [res.status, res.body.code])).toEqual(Array(4).fill([403, "permission_denied"]));
    const refusedReads = await Promise.all([
      post("list", {}, project.publicKey),
      post("history", { key: "shop" }, project.publicKey),
      post("evaluate", { partner_user_id: "p1" }, project.publicKey),
    ]);
    expect(refusedReads.map((res) => res.status)).toEqual([403, 403, 403]);
    expect((await post("list", {}, "sk_not_a_key")).status).toBe(401);
  });

  it("shows a second project's keys nothing of the first's, and lets them change nothing of it", async () => {
    const other = await svc.createProject("Other Game");
    expect(await ok("list", {}, other.privateKey)).toEqual({
      entries: [],
      entries_info: { total: 0, pages: 0, page: 1 },
    });
    expect((await ok("history", { key: "shop" }, other.privateKey)).versions).toEqual([]);
    expect((await post("restore", { key: "shop", version: 1 }, other.privateKey)).status).toBe(404);
    expect((await post("delete", { key: "shop" }, other.privateKey)).status).toBe(404);
    expect(await ok("evaluate", { partner_user_id: "p1", keys: ["shop", "a:key"] }, other.privateKey)).toEqual({
      config: {},
      experiments: {},
      version: 0,
    });
    // Its own entry of the same key is its own.
    await ok("update", { key: "shop", default_value: "theirs" }, other.privateKey);
    const mine = await ok("evaluate", { partner_user_id: "p1", keys: ["shop"] });
    expect(mine.config).toEqual({ shop: null });
    const theirs = await ok("evaluate", { partner_user_id: "p1", keys: ["shop"] }, other.privateKey);
    expect(theirs.config).toEqual({ shop: "theirs" });
  });
});
