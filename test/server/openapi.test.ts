import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LaunchTokenService } from "../../gen/platformapi/v1/launch_pb.js";
import { createLaunchFixture, type LaunchFixture } from "../support/service/launch.js";
import { createSchemaChecker } from "../support/clients/openapi.js";
import { breakProject, waitFor } from "../support/service/events.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

let test: TestService;
let launch: LaunchFixture;
let doc: any;
let checker: ReturnType<typeof createSchemaChecker>;
/** "post /v1/..." of every operation answered 200 by some call below. */
const answered = new Set<string>();

beforeAll(async () => {
  // A segment that fails once is parked: the admin calls on parked segments are called on one.
  test = await startTestService({ EVENT_PARK_AFTER_FAILURES: "1" });
  launch = await createLaunchFixture(test);
  const res = await fetch(`${test.baseUrl}/v1/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/json");
  doc = await res.json();
  checker = createSchemaChecker(doc.components);
});
afterAll(() => test.stop());

/** The document's response for a status: the exact one, else its class (4XX), resolved. */
function responseFor(operation: any, status: number): any {
  const response = operation.responses[String(status)] ?? operation.responses[`${String(status)[0]}XX`];
  expect(response, `no documented response for ${status}`).toBeDefined();
  return response.$ref ? doc.components.responses[response.$ref.split("/").pop()] : response;
}

/**
 * Calls an operation of the document as a client would, and checks both ways:
 * a request the gateway accepted (200) matches the documented request body,
 * and every answer matches the documented response of its status.
 */
async function call(path: string, body: unknown, apiKey?: string, verb = "post") {
  const operation = doc.paths[path]?.[verb];
  expect(operation, `${verb} ${path} is not in the document`).toBeDefined();
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (apiKey !== undefined) headers["x-api-key"] = apiKey;
  const res = await fetch(test.baseUrl + path, {
    method: verb.toUpperCase(),
    headers,
    body: verb === "post" ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  const type = res.headers.get("content-type") ?? "";
  // A stream's answer (application/x-ndjson): each line is checked against the document's schema.
  const json =
    type === "application/x-ndjson"
      ? text
          .trimEnd()
          .split("\n")
          .map((line) => JSON.parse(line))
      : JSON.parse(text);
  expect(type).toMatch(/^application\/(json|x-ndjson)$/);
  const documented = responseFor(operation, res.status).content[type].schema;
  for (const answer of type === "application/x-ndjson" ? json : [json]) {
    expect(checker.check(documented, answer), `${verb} ${path} answered ${res.status} ${text}`).toBeUndefined();
  }
  if (res.status === 200) {
    answered.add(`${verb} ${path}`);
    if (operation.requestBody) {
      const request = operation.requestBody.content["application/json"].schema;
      expect(checker.check(request, body), `${verb} ${path} accepted an undocumented body`).toBeUndefined();
    }
  }
  return { status: res.status, body: json };
}

describe("the served OpenAPI document", () => {
  it("is the committed gen/openapi/openapi.json, served without a key, OpenAPI 3.1", async () => {
    const committed = JSON.parse(await readFile(new URL("../../gen/openapi/openapi.json", import.meta.url), "utf8"));
    expect(doc).toEqual(committed);
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.components.securitySchemes.ApiKey).toEqual(expect.objectContaining({ in: "header", name: "X-Api-Key" }));
  });

  it("names each operation's scope and takes proto comments as descriptions", () => {
    const verify = doc.paths["/v1/launch_tokens/verify"].post;
    expect(verify["x-required-scope"]).toBe("launch:verify");
    expect(verify.security).toEqual([{ ApiKey: ["launch:verify"] }]);
    expect(verify.description).toContain("A token\nverifies once");
    expect(doc.paths["/v1/.well-known/jwks.json"].get.security).toEqual([]);
    const profile = doc.components.schemas["platformapi.v1.PlayerProfile"];
    expect(profile.properties.device_id).toEqual({
      description: "Set for a not-signed-in player.",
      type: ["string", "null"],
    });
  });
});

describe("every /v1 answer matches the document", () => {
  it("admin: projects, keys, entitlements, signing keys", async () => {
    const project = await call(
      "/v1/admin/projects",
      { name: "OpenAPI Game", game_id: launch.gameId + 50_000 },
      ADMIN_KEY,
    );
    expect(project.status).toBe(200);
    const key = await call(
      "/v1/admin/api_keys",
      { project_id: project.body.project.project_id, type: "public" },
      ADMIN_KEY,
    );
    expect(key.status).toBe(200);
    expect((await call("/v1/admin/api_keys/revoke", { key_id: key.body.key_id }, ADMIN_KEY)).status).toBe(200);
    const entitlement = {
      platformUserId: launch.platformUserId, // JSON names are accepted on input, and documented so
      game_id: launch.gameId,
      owns: true,
      source: "STORE",
      channel_id: "stable",
      build_version: "1.0.0",
    };
    expect((await call("/v1/admin/entitlements", entitlement, ADMIN_KEY)).status).toBe(200);
    expect((await call("/v1/admin/signing_keys/rotate", {}, ADMIN_KEY)).status).toBe(200);
    expect((await call("/v1/admin/projects/list", { page_size: 2 }, ADMIN_KEY)).status).toBe(200);
    const projectId = project.body.project.project_id;
    expect((await call("/v1/admin/api_keys/list", { project_id: projectId }, ADMIN_KEY)).status).toBe(200);
    const ofUser = { platform_user_id: launch.platformUserId, game_id: launch.gameId };
    expect((await call("/v1/admin/entitlements/list", ofUser, ADMIN_KEY)).status).toBe(200);

    // An event segment that fails is parked, listed, and queued again once the project is repaired.
    const failing = await test.createProject();
    const repair = await breakProject(test, failing.projectId);
    await test.postOk("/v1/events", { events: [{ name: "play", partner_user_id: "p" }] }, failing.publicKey);
    const parked = await waitFor(
      () => call("/v1/admin/events/parked", { project_id: failing.projectId }, ADMIN_KEY),
      (res) => res.status === 200 && res.body.segments.length === 1,
    );
    await repair();
    const retry = { project_id: failing.projectId, seq: parked.body.segments[0].seq };
    expect((await call("/v1/admin/events/parked/retry", retry, ADMIN_KEY)).status).toBe(200);

    expect((await call("/v1/admin/projects", { game_id: 1 }, ADMIN_KEY)).status).toBe(400);
    expect((await call("/v1/admin/api_keys", { type: "nope" }, ADMIN_KEY)).status).toBe(400);
    expect((await call("/v1/admin/projects", { name: "x", game_id: 2 })).status).toBe(401);
    expect((await call("/v1/admin/projects", { name: "x", game_id: 3 }, launch.privateKey)).status).toBe(403);
  });

  it("launch tokens: issue, verify (valid, then already_used with nulls), JWKS", async () => {
    const issued = await call(
      "/v1/launch_tokens/issue",
      { platform_user_id: launch.platformUserId, installation_id: launch.installationId, game_id: launch.gameId },
      launch.platformKey,
    );
    expect(issued.status).toBe(200);
    const valid = await call("/v1/launch_tokens/verify", { token: issued.body.token }, launch.privateKey);
    expect(valid.body).toMatchObject({ valid: true, error: null });
    const spent = await call("/v1/launch_tokens/verify", { token: issued.body.token }, launch.privateKey);
    expect(spent.body).toMatchObject({
      valid: false,
      platform_user_id: null,
      entitlement: null,
      error: "already_used",
    });
    expect((await call("/v1/.well-known/jwks.json", undefined, undefined, "get")).status).toBe(200);

    expect((await call("/v1/launch_tokens/verify", { token: "x" })).status).toBe(401);
    expect((await call("/v1/launch_tokens/verify", { token: 5 }, launch.privateKey)).status).toBe(400);
    const notOwned = {
      platform_user_id: crypto.randomUUID(),
      installation_id: launch.installationId,
      game_id: launch.gameId,
    };
    expect((await call("/v1/launch_tokens/issue", notOwned, launch.platformKey)).status).toBe(403);
  });

  it("players: update, get, search, tags, tag metadata, link, data, delete", async () => {
    const { privateKey } = launch;
    const device = `dev-${crypto.randomUUID()}`;
    const update = await call(
      "/v1/players/update",
      {
        players: [
          { device_id: device, tags_add: ["Guest"], traits: { level: 1, name: "x", ok: true } },
          { partner_user_id: "openapi-1", tags: ["vip", "bad tag!"], traits_increment: { sessions: 1 } },
          { tags_add: ["lost"] },
        ],
      },
      privateKey,
    );
    expect(update.body.updated[0]).toMatchObject({ partner_user_id: null, platform_user_id: null });
    expect(update.body.rejected).toEqual([expect.objectContaining({ partner_user_id: null, device_id: null })]);
    const got = await call("/v1/players/get", { device_id: device }, privateKey);
    expect(got.body).toMatchObject({ found: true, profile: { partner_user_id: null, device_id: device } });
    expect((await call("/v1/players/get", { partner_user_id: "nobody" }, privateKey)).body).toEqual({
      found: false,
      profile: null,
    });
    expect((await call("/v1/players/search", { tags: ["guest"], traits: { level: 1 } }, privateKey)).status).toBe(200);
    const exported = await call("/v1/players/export", { tags: ["guest"] }, privateKey);
    expect(exported.body).toEqual([{ player: expect.objectContaining({ partner_user_id: null, device_id: device }) }]);
    const tags = await call("/v1/players/tags", { page: 1, page_size: 10 }, privateKey);
    expect(tags.body.tags[0]).toMatchObject({ category: null, description: null });
    const tagged = await call(
      "/v1/players/tags/update",
      { tag: "vip", category: "paying", is_hidden: false },
      privateKey,
    );
    expect(tagged.body.tag).toMatchObject({ category: "paying", description: null });
    const trait = await call("/v1/players/traits/update", { key: "level", materialise: true }, privateKey);
    expect(trait.body).toMatchObject({ key: "level", materialised: true });
    const traits = await call("/v1/players/traits", { page: 1 }, privateKey);
    expect(traits.body.traits).toContainEqual(expect.objectContaining({ key: "level", materialised: true }));
    const link = { platform_user_id: launch.platformUserId, partner_user_id: "openapi-1" };
    expect((await call("/v1/players/link", link, privateKey)).status).toBe(200);
    const data = await call("/v1/players/data", { device_id: device }, privateKey);
    expect(data.body).toEqual([{ profile: expect.objectContaining({ tags: expect.any(Array) }) }]);
    const erased = await call("/v1/players/delete", { device_id: device }, privateKey);
    expect(erased.body).toEqual({ deleted: true, identity_key: `d:${device}` });

    expect((await call("/v1/players/tags", { page_size: 101, page: 1 }, privateKey)).status).toBe(400);
    expect((await call("/v1/players/tags/update", { tag: "never-seen" }, privateKey)).status).toBe(404);
    const unknownKey = { key: "never-seen", materialise: true };
    expect((await call("/v1/players/traits/update", unknownKey, privateKey)).status).toBe(404);
    expect((await call("/v1/players/search", { tags_match: "some" }, privateKey)).status).toBe(400);
    expect((await call("/v1/players/update", { players: [], unknown: 1 }, privateKey)).status).toBe(400);
  });

  it("events: ingest, trends, names, retention and active players", async () => {
    const ingest = await call(
      "/v1/events",
      {
        events: [
          { name: "level_up", partner_user_id: "openapi-1" },
          { name: "bad name!", device_id: "d" },
        ],
      },
      launch.publicKey,
    );
    expect(ingest.body).toMatchObject({ accepted: 1, rejected: [{ index: 1, code: "bad_name" }] });
    const range = { from: "2026-01-01", to: "2026-01-02" };
    const trends = await call(
      "/v1/events/trends",
      { ...range, names: ["level_up"], split_by: "tags" },
      launch.privateKey,
    );
    expect(trends.status).toBe(200);
    expect((await call("/v1/events/names", { ...range, tags: ["vip"] }, launch.privateKey)).status).toBe(200);
    expect((await call("/v1/events/trends", { from: range.to, to: range.from }, launch.privateKey)).status).toBe(400);
    const retention = { ...range, interval: "week", periods: 3, return_name: "level_up", split_by: "tags" };
    expect((await call("/v1/events/retention", retention, launch.privateKey)).status).toBe(200);
    expect((await call("/v1/events/retention", range, launch.privateKey)).status).toBe(200);
    expect((await call("/v1/events/active", { ...range, names: ["level_up"] }, launch.privateKey)).status).toBe(200);
    expect((await call("/v1/project/get", {}, launch.privateKey)).status).toBe(200);
    expect((await call("/v1/project/get", {}, launch.publicKey)).status).toBe(403);
  });

  it("events: summed properties, and trends with a sum", async () => {
    const sum = { name: "level_up", property: "coins", sum: true };
    expect((await call("/v1/events/properties/update", sum, launch.privateKey)).body).toEqual({ property: sum });
    expect((await call("/v1/events/properties", {}, launch.privateKey)).body).toEqual({ properties: [sum] });
    const range = { from: "2026-01-01", to: "2026-01-01", names: ["level_up"], sum: "coins" };
    const trends = await call("/v1/events/trends", range, launch.privateKey);
    expect(trends.body.series[0].points[0]).toEqual({ date: "2026-01-01", events: 0, players: 0, sum: 0 });
  });

  it("config and experiments: entries, versions, evaluate; experiments", async () => {
    const { privateKey } = launch;
    const entry = {
      key: "shop",
      default_value: { layout: "a", prices: [1, 2.5], open: true, note: null },
      rules: [{ tags: ["vip"], tags_none: ["new"], traits: { level: 3 }, rollout_percent: 50, value: "b" }],
      in_launch: true,
    };
    const updated = await call("/v1/config/update", entry, privateKey);
    expect(updated.body.entry).toMatchObject({ version: 1, rules: [{ rollout_percent: 50, value: "b" }] });
    const plain = await call("/v1/config/update", { key: "plain", default_value: null }, privateKey);
    expect(plain.body.entry).toMatchObject({ default_value: null, rules: [] });
    expect((await call("/v1/config/list", { page: 1, page_size: 10 }, privateKey)).body.entries).toHaveLength(2);
    const deleted = await call("/v1/config/delete", { key: "plain" }, privateKey);
    expect(deleted.body).toEqual({ version: 2 });
    const history = await call("/v1/config/history", { key: "plain" }, privateKey);
    expect(history.body.versions[0]).toMatchObject({ version: 2, entry: null });
    expect((await call("/v1/config/restore", { key: "plain", version: 1 }, privateKey)).body.entry.version).toBe(3);
    const variants = [
      { name: "a", weight: 1 },
      { name: "b", weight: 2.5 },
    ];
    const experiment = await call(
      "/v1/experiments/update",
      { name: "exp", variants, tags_none: ["new"], state: "running" },
      privateKey,
    );
    expect(experiment.body.experiment).toMatchObject({ control: "a", state: "running" });
    expect((await call("/v1/experiments/list", {}, privateKey)).body.experiments).toHaveLength(1);
    const evaluated = await call("/v1/config/evaluate", { partner_user_id: "openapi-2" }, privateKey);
    expect(evaluated.body).toEqual({
      config: { shop: entry.default_value },
      experiments: { exp: expect.any(String) },
      version: 5,
    });

    expect((await call("/v1/config/update", { key: "bad key", default_value: 1 }, privateKey)).status).toBe(400);
    const results = await call(
      "/v1/experiments/results",
      { name: "exp", metric: { kind: "return", days: 1 } },
      privateKey,
    );
    expect(results.body).toMatchObject({
      control: "a",
      variants: [{ variant: "a", difference: null }, { variant: "b" }],
    });
    expect(results.body.variants.reduce((sum: number, one: { exposed: number }) => sum + one.exposed, 0)).toBe(1);
    expect((await call("/v1/config/evaluate", { partner_user_id: "p" }, launch.publicKey)).status).toBe(403);
    const oneVariant = { name: "x", variants: [variants[0]], state: "draft" };
    expect((await call("/v1/experiments/update", oneVariant, privateKey)).status).toBe(400);
  });

  it("called every documented operation with success", async () => {
    const operations = Object.entries(doc.paths).flatMap(([path, item]: [string, any]) =>
      Object.keys(item).map((verb) => `${verb} ${path}`),
    );
    expect(operations.filter((op) => !answered.has(op))).toEqual([]);
  });
});

describe("the document is strict where the gateway is", () => {
  it("rejects a body with an unknown field, as the gateway does", () => {
    const request = doc.paths["/v1/launch_tokens/verify"].post.requestBody.content["application/json"].schema;
    expect(checker.check(request, { token: "t", extra: 1 })).toMatch(/additional properties/);
    expect(checker.check(request, { token: "t" })).toBeUndefined();
  });

  it("rejects an answer that omits a null instead of writing it", () => {
    const answer = doc.paths["/v1/launch_tokens/verify"].post.responses["200"].content["application/json"].schema;
    expect(checker.check(answer, { valid: false, error: "expired" })).toMatch(/required property/);
  });

  it("the errors of paths outside the document have the documented error shape", async () => {
    const error = { $ref: "#/components/schemas/Error" };
    const unknown = await test.postJson("/v1/nothing/here", {}, ADMIN_KEY);
    expect(unknown.status).toBe(404);
    expect(checker.check(error, unknown.body)).toBeUndefined();
    const tooBig = await test.postJson("/v1/players/update", "x".repeat(1024 * 1024 + 1), ADMIN_KEY);
    expect(tooBig.status).toBe(413);
    expect(checker.check(error, tooBig.body)).toBeUndefined();
  });

  it("the refusals of a body before it is read as JSON are documented errors: 415, bad UTF-8, bad numbers", async () => {
    const path = "/v1/players/search";
    const operation = doc.paths[path].post;
    const refusals: [Record<string, string>, BodyInit, number][] = [
      [{ "content-type": "text/plain" }, "{}", 415],
      [{ "content-type": "application/json" }, new Uint8Array([0x7b, 0xff, 0x7d]), 400],
      [{ "content-type": "application/json" }, '{"page": "0x2a"}', 400],
      [{ "content-type": "application/json" }, '{"page": 0}', 400],
      [{ "content-type": "application/json" }, '{"traits": {"__proto__": "x"}}', 400],
    ];
    for (const [headers, body, status] of refusals) {
      const res = await fetch(test.baseUrl + path, {
        method: "POST",
        headers: { ...headers, "x-api-key": launch.privateKey },
        body,
      });
      const json = await res.json();
      expect(res.status, JSON.stringify(json)).toBe(status);
      const documented = responseFor(operation, status).content["application/json"].schema;
      expect(checker.check(documented, json)).toBeUndefined();
    }
  });

  it("refuses the request bodies the service refuses for its declared rules", () => {
    const request = (path: string) => doc.paths[path].post.requestBody.content["application/json"].schema;
    for (const page of [0, -1, "0x2a", "+42"])
      expect(checker.check(request("/v1/players/search"), { page })).toBeDefined();
    expect(checker.check(request("/v1/players/tags"), { page_size: 101 })).toBeDefined();
    expect(
      checker.check(request("/v1/admin/entitlements"), { platform_user_id: "not-a-uuid", game_id: 1 }),
    ).toBeDefined();
    const players = Array.from({ length: 101 }, (_, i) => ({ partner_user_id: `p${i}` }));
    expect(checker.check(request("/v1/players/update"), { players })).toBeDefined();
    expect(checker.check(request("/v1/players/update"), { players: players.slice(1) })).toBeUndefined();
  });

  it("refuses what the service refuses: a field under both its names, an empty required string, a zero id, past uint32", async () => {
    const request = (path: string) => doc.paths[path].post.requestBody.content["application/json"].schema;
    const project = (body: object) => checker.check(request("/v1/admin/projects"), body);
    for (const body of [
      { name: "x", game_id: 1, gameId: 1 },
      { name: "", game_id: 1 },
      { name: "x", game_id: 0 },
      { name: "x", game_id: "0" },
      { name: "x", game_id: "00" },
      { name: "x", game_id: 2 ** 32 },
    ]) {
      expect(project(body)).toBeDefined();
      const res = await test.postJson("/v1/admin/projects", body, ADMIN_KEY);
      expect(res.status).toBe(400);
    }
    for (const game_id of [7, "7", "007"]) expect(project({ name: "x", game_id })).toBeUndefined();
    // Stated as bounds too, for tools that do not know the format "uint32" (Schemathesis).
    const gameId = doc.components.schemas["platformapi.v1.CreateProjectRequest"].properties.game_id;
    expect(gameId).toMatchObject({ minimum: 1, maximum: 2 ** 32 - 1 });
  });
});

describe("null versus absent", () => {
  it("only /v1 writes nulls: Connect keeps proto3 JSON and omits unset fields", async () => {
    const res = await fetch(`${test.baseUrl}/${LaunchTokenService.typeName}/Verify`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": launch.privateKey },
      body: JSON.stringify({ token: "not-a-token" }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ valid: false, error: "invalid_token", config: {}, experiments: {} });
  });
});
