import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/platformapi/v1/admin_pb.js";
import { MAX_BODY_BYTES } from "../../src/server/http/http-gateway.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

let test: TestService;
beforeAll(async () => {
  test = await startTestService();
});
afterAll(() => test.stop());

function expectErrorShape(body: any, code: string): void {
  expect(Object.keys(body).sort()).toEqual(["code", "message"]);
  expect(body.code).toBe(code);
  expect(typeof body.message).toBe("string");
  expect(body.message.length).toBeGreaterThan(0);
}

describe("authentication", () => {
  it("401 without a key", async () => {
    const res = await test.postJson("/v1/admin/projects", { name: "x", game_id: 1 });
    expect(res.status).toBe(401);
    expectErrorShape(res.body, "unauthenticated");
  });

  it("401 with an unknown key", async () => {
    const res = await test.postJson("/v1/admin/projects", { name: "x", game_id: 1 }, "adm_not_a_real_key");
    expect(res.status).toBe(401);
    expectErrorShape(res.body, "unauthenticated");
  });

  it("401 on the next request after a key is revoked, over JSON and gRPC", async () => {
    const { keyId, key } = await test.createKey("admin");
    const before = await test.postJson(
      "/v1/admin/entitlements",
      { platform_user_id: "7f1c2a4e-0000-4000-8000-0000000000aa", game_id: 5 },
      key,
    );
    expect(before.status).toBe(200);

    const revoked = await test.postJson("/v1/admin/api_keys/revoke", { key_id: keyId }, ADMIN_KEY);
    expect(revoked.status).toBe(200);
    expect(revoked.body.key_id).toBe(keyId);
    expect(Date.parse(revoked.body.revoked_at)).not.toBeNaN();

    const after = await test.postJson(
      "/v1/admin/entitlements",
      { platform_user_id: "7f1c2a4e-0000-4000-8000-0000000000aa", game_id: 5 },
      key,
    );
    expect(after.status).toBe(401);
    expectErrorShape(after.body, "unauthenticated");
    const overGrpc = test
      .client(AdminService)
      .setEntitlement(
        { platformUserId: "7f1c2a4e-0000-4000-8000-0000000000aa", gameId: 5 },
        { headers: { "x-api-key": key } },
      );
    await expect(overGrpc).rejects.toMatchObject({ code: Code.Unauthenticated });
  });

  it("404 when revoking a key that does not exist", async () => {
    const res = await test.postJson("/v1/admin/api_keys/revoke", { key_id: "key_nope" }, ADMIN_KEY);
    expect(res.status).toBe(404);
    expectErrorShape(res.body, "not_found");
  });

  it("403 with a key that lacks the scope, over JSON and gRPC", async () => {
    const { privateKey, publicKey } = await test.createProject();
    for (const key of [privateKey, publicKey]) {
      const res = await test.postJson("/v1/admin/projects", { name: "x", game_id: 77 }, key);
      expect(res.status).toBe(403);
      expectErrorShape(res.body, "permission_denied");
    }
    const overGrpc = test
      .client(AdminService)
      .createProject({ name: "x", gameId: 77 }, { headers: { "x-api-key": privateKey } });
    await expect(overGrpc).rejects.toSatisfy((e) => e instanceof ConnectError && e.code === Code.PermissionDenied);
  });

  it("stores keys only as hashes", async () => {
    const { privateKey, publicKey } = await test.createProject();
    const stored = JSON.stringify(await test.database.db.collection("api_keys").find().toArray());
    for (const key of [privateKey, publicKey, ADMIN_KEY]) {
      expect(stored).not.toContain(key);
      expect(stored).not.toContain(key.slice(3));
    }
  });
});

describe("validation", () => {
  const call = (body: string | object) => test.postJson("/v1/admin/projects", body, ADMIN_KEY);

  it("400 for malformed JSON", async () => {
    const res = await call('{"name": "x", ');
    expect(res.status).toBe(400);
    expectErrorShape(res.body, "invalid_argument");
    expect(res.body.message).toMatch(/^malformed JSON/);
  });

  it("400 naming an unknown field", async () => {
    const res = await call({ name: "x", game_id: 3, colour: "red" });
    expect(res.status).toBe(400);
    expectErrorShape(res.body, "invalid_argument");
    expect(res.body).toEqual({ code: "invalid_argument", message: "colour: unknown field" });
  });

  it("400 naming a nested unknown field and an out-of-range integer by their paths, on /v1 and Connect", async () => {
    const { privateKey } = await test.createProject();
    const connectJson = async (path: string, body: object, key: string) => {
      const headers = { "content-type": "application/json", "x-api-key": key };
      const res = await fetch(`${test.baseUrl}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
      return { status: res.status, body: await res.json() };
    };
    const cases = [
      {
        v1: "/v1/players/update",
        rpc: "/platformapi.v1.PlayerService/Update",
        body: { players: [{ partner_user_id: "a" }, { partner_user_id: "b", unknown_op: 1 }] },
        key: privateKey,
        message: "players[1].unknown_op: unknown field",
      },
      {
        v1: "/v1/admin/projects",
        rpc: "/platformapi.v1.AdminService/CreateProject",
        body: { name: "x", game_id: -5 },
        key: ADMIN_KEY,
        message: "game_id: -5 is out of range for uint32",
      },
      {
        v1: "/v1/admin/projects",
        rpc: "/platformapi.v1.AdminService/CreateProject",
        body: { name: "x", game_id: "4294967296" },
        key: ADMIN_KEY,
        message: 'game_id: "4294967296" is out of range for uint32',
      },
    ];
    for (const { v1, rpc, body, key, message } of cases) {
      expect(await test.postJson(v1, body, key)).toMatchObject({
        status: 400,
        body: { code: "invalid_argument", message },
      });
      expect(await connectJson(rpc, body, key)).toEqual({ status: 400, body: { code: "invalid_argument", message } });
    }
  });

  it("400 naming a field of the wrong type", async () => {
    const res = await call({ name: "x", game_id: "three" });
    expect(res.status).toBe(400);
    expectErrorShape(res.body, "invalid_argument");
    expect(res.body.message).toContain("game_id");
  });

  it("400 naming a missing required field", async () => {
    const res = await call({ game_id: 3 });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: "invalid_argument", message: "name: required" });
  });

  it("400 for a platform user id that is not a UUID", async () => {
    const res = await test.postJson("/v1/admin/entitlements", { platform_user_id: "someone", game_id: 3 }, ADMIN_KEY);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: "invalid_argument", message: "platform_user_id: must be a UUID" });
  });

  it("400 for a body that is not a JSON object", async () => {
    const res = await call("[1, 2]");
    expect(res.status).toBe(400);
    expectErrorShape(res.body, "invalid_argument");
  });

  it("400 for a key type that does not exist, and for a project key without a project", async () => {
    const badType = await test.postJson("/v1/admin/api_keys", { type: "root" }, ADMIN_KEY);
    expect(badType.status).toBe(400);
    expect(badType.body.message).toMatch(/^type:/);
    const noProject = await test.postJson("/v1/admin/api_keys", { type: "private" }, ADMIN_KEY);
    expect(noProject.status).toBe(400);
    expect(noProject.body.message).toMatch(/^project_id:/);
  });
});

describe("routing", () => {
  it("404 for an unknown /v1 path and an unknown path", async () => {
    for (const path of ["/v1/nothing/here", "/nothing"]) {
      const res = await test.postJson(path, {}, ADMIN_KEY);
      expect(res.status).toBe(404);
      expectErrorShape(res.body, "not_found");
    }
  });

  it("405 with Allow for the wrong method", async () => {
    const res = await fetch(`${test.baseUrl}/v1/admin/projects`, { method: "GET" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    expectErrorShape(await res.json(), "invalid_argument");
  });

  it("400 for null where the field cannot be unset, and for a body of only whitespace, on /v1 and Connect", async () => {
    const { privateKey } = await test.createProject();
    const cases: [string, string, object, string][] = [
      ["/v1/launch_tokens/verify", "/platformapi.v1.LaunchTokenService/Verify", { token: null }, "token"],
      ["/v1/players/update", "/platformapi.v1.PlayerService/Update", { players: null }, "players"],
      ["/v1/events", "/platformapi.v1.EventService/Ingest", { events: null }, "events"],
      ["/v1/players/tags", "/platformapi.v1.PlayerService/ListTags", { text: null }, "text"],
    ];
    for (const [v1, rpc, body, field] of cases) {
      const expected = { status: 400, body: { code: "invalid_argument", message: `${field}: must not be null` } };
      expect(await test.postJson(v1, body, privateKey)).toMatchObject(expected);
      const headers = { "content-type": "application/json", "x-api-key": privateKey };
      const res = await fetch(`${test.baseUrl}${rpc}`, { method: "POST", headers, body: JSON.stringify(body) });
      expect({ status: res.status, body: await res.json() }).toEqual(expected);
    }
    // A field with presence takes null as unset.
    expect((await test.postJson("/v1/players/tags", { page: null, category: null }, privateKey)).status).toBe(200);
    const blank = await test.postJson("/v1/launch_tokens/verify", " \n", privateKey);
    expect(blank.status).toBe(400);
    expect(blank.body.message).toMatch(/^malformed JSON/);
    expect((await test.postJson("/v1/players/tags", "", privateKey)).status).toBe(200);
  });

  it("405 with Allow and the error shape for the wrong method on an RPC path", async () => {
    for (const method of ["GET", "PUT", "DELETE"]) {
      const res = await fetch(`${test.baseUrl}/platformapi.v1.AdminService/CreateProject`, { method });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
      expect(await res.json()).toEqual({
        code: "invalid_argument",
        message: `/platformapi.v1.AdminService/CreateProject takes POST, not ${method}`,
      });
    }
  });

  it("413 for a body over 1 MiB, whether Content-Length announces it or not", async () => {
    const big = JSON.stringify({ name: "x".repeat(MAX_BODY_BYTES), game_id: 1 });
    const announced = await test.postJson("/v1/admin/projects", big, ADMIN_KEY);
    expect(announced.status).toBe(413);
    expectErrorShape(announced.body, "resource_exhausted");

    const chunks = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(big));
        controller.close();
      },
    });
    const streamed = await fetch(`${test.baseUrl}/v1/admin/projects`, {
      method: "POST",
      headers: { "x-api-key": ADMIN_KEY },
      body: chunks,
      duplex: "half",
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expectErrorShape(await streamed.json(), "resource_exhausted");
  });
});

describe("tenancy", () => {
  it("a project key cannot create or revoke keys, for its own project or another", async () => {
    const a = await test.createProject("A");
    const b = await test.createProject("B");
    const other = await test.createKey("private", b.projectId);
    for (const [path, body] of [
      ["/v1/admin/api_keys", { type: "private", project_id: b.projectId }],
      ["/v1/admin/api_keys", { type: "private", project_id: a.projectId }],
      ["/v1/admin/api_keys/revoke", { key_id: other.keyId }],
    ] as const) {
      const res = await test.postJson(path, body, a.privateKey);
      expect(res.status).toBe(403);
    }
    const stillWorks = await test.postJson("/v1/admin/api_keys/revoke", { key_id: other.keyId }, ADMIN_KEY);
    expect(stillWorks.status).toBe(200);
  });
});
