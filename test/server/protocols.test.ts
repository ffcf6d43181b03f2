import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/platformapi/v1/admin_pb.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

let test: TestService;
beforeAll(async () => {
  test = await startTestService();
});
afterAll(() => test.stop());

const adminHeaders = { "x-api-key": ADMIN_KEY };

/** A /v1 JSON call over cleartext HTTP/2 (prior knowledge), on the same port as everything else. */
async function postJsonHttp2(path: string, body: unknown): Promise<{ status: number; body: any }> {
  const session = http2.connect(test.baseUrl);
  try {
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/json",
      ...adminHeaders,
    });
    stream.end(JSON.stringify(body));
    const [status, text] = await new Promise<[number, string]>((resolve, reject) => {
      let status = 0;
      let text = "";
      stream.on("response", (headers) => (status = Number(headers[":status"])));
      stream.on("data", (chunk: Buffer) => (text += chunk.toString()));
      stream.on("end", () => resolve([status, text]));
      stream.on("error", reject);
    });
    return { status, body: JSON.parse(text) };
  } finally {
    session.close();
  }
}

describe("one admin call over every protocol", () => {
  it("gives the same result over gRPC, gRPC-Web, Connect and /v1 JSON on HTTP/1.1 and HTTP/2", async () => {
    const entitlement = { platform_user_id: "7f1c2a4e-0000-4000-8000-000000000001", owns: true, source: "STORE" };
    const viaJson = await test.postJson("/v1/admin/entitlements", { ...entitlement, game_id: 1001 }, ADMIN_KEY);
    const viaHttp2 = await postJsonHttp2("/v1/admin/entitlements", { ...entitlement, game_id: 1002 });
    const request = { platformUserId: entitlement.platform_user_id, owns: true, source: "STORE" };
    const viaGrpc = await test
      .client(AdminService, "grpc")
      .setEntitlement({ ...request, gameId: 1003 }, { headers: adminHeaders });
    const viaGrpcWeb = await test
      .client(AdminService, "grpc-web")
      .setEntitlement({ ...request, gameId: 1004 }, { headers: adminHeaders });
    const viaConnect = await test
      .client(AdminService, "connect")
      .setEntitlement({ ...request, gameId: 1005 }, { headers: adminHeaders });

    expect(viaJson.status).toBe(200);
    expect(viaHttp2.status).toBe(200);
    const expected = (gameId: number) => ({
      platform_user_id: entitlement.platform_user_id,
      entitlement: { owns: true, source: "STORE", game_id: gameId, channel_id: "", build_version: "" },
    });
    expect(viaJson.body).toEqual(expected(1001));
    expect(viaHttp2.body).toEqual(expected(1002));
    for (const [answer, gameId] of [
      [viaGrpc, 1003],
      [viaGrpcWeb, 1004],
      [viaConnect, 1005],
    ] as const) {
      expect(answer.platformUserId).toBe(entitlement.platform_user_id);
      expect(answer.entitlement).toMatchObject({ owns: true, source: "STORE", gameId });
    }
  });

  it("speaks Connect JSON with proto field names and accepts camelCase input", async () => {
    const res = await fetch(`${test.baseUrl}/platformapi.v1.AdminService/CreateProject`, {
      method: "POST",
      headers: { "content-type": "application/json", ...adminHeaders },
      body: JSON.stringify({ name: "Camel", gameId: 2001 }),
    });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.project).toMatchObject({ name: "Camel", game_id: 2001 });
    expect(body.private_key).toMatch(/^sk_/);
  });

  it("serves the same project over gRPC and JSON: a game_id taken over one is taken over the other", async () => {
    await test.client(AdminService).createProject({ name: "Over gRPC", gameId: 2002 }, { headers: adminHeaders });
    const again = await test.postJson("/v1/admin/projects", { name: "Over JSON", game_id: 2002 }, ADMIN_KEY);
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ code: "already_exists", message: "game_id 2002 already belongs to a project" });
  });
});

describe("operations endpoints", () => {
  it("answers /healthz and /readyz", async () => {
    for (const path of ["/healthz", "/readyz"]) {
      const res = await fetch(test.baseUrl + path);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ status: "ok" });
    }
  });
});
