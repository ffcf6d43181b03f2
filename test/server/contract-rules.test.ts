import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/platformapi/v1/admin_pb.js";
import { PlayerService } from "../../gen/platformapi/v1/players_pb.js";
import { MAX_BODY_BYTES } from "../../src/server/http/http-gateway.js";
import { expectError, jsonHeaders, rawPost } from "../support/service/raw-requests.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

/** The contract's smaller rules, each once broken: Content-Type, the size limit per protocol, defaults, pages. */

let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;

beforeAll(async () => {
  svc = await startTestService();
  project = await svc.createProject();
});
afterAll(() => svc.stop());

const raw = (path: string, body: string | Uint8Array<ArrayBuffer>, headers: Record<string, string>) =>
  rawPost(svc.baseUrl + path, body, headers);
const asJson = jsonHeaders;

describe("/v1 Content-Type", () => {
  const body = JSON.stringify({ partner_user_id: "anyone" });

  it("answers 415 in the error shape for anything but JSON", async () => {
    for (const type of [
      "text/plain",
      "application/x-www-form-urlencoded",
      "application/xml",
      "application/grpc",
      "multipart/form-data; boundary=x",
      "application/json-seq",
      "application/json; charset=latin1",
    ]) {
      const res = await raw("/v1/players/get", body, { "content-type": type, "x-api-key": project.privateKey });
      expect(res.status, type).toBe(415);
      expectError(res, 415, "invalid_argument");
    }
  });

  it("accepts application/json with or without charset, and a body without Content-Type", async () => {
    const types: Record<string, string>[] = [
      { "content-type": "application/json" },
      { "content-type": "Application/JSON; charset=UTF-8" },
      {},
    ];
    for (const headers of types) {
      const res = await fetch(`${svc.baseUrl}/v1/players/get`, {
        method: "POST",
        // A string body gets text/plain from fetch unless a type is given; a Blob without a type sends none.
        body: new Blob([body]),
        headers: { ...headers, "x-api-key": project.privateKey },
      });
      expect(res.status, JSON.stringify(headers)).toBe(200);
    }
  });
});

describe("a message over the size limit", () => {
  const big = JSON.stringify({ partner_user_id: "x".repeat(MAX_BODY_BYTES) });

  it("answers 413 resource_exhausted over Connect, announced or streamed", async () => {
    const announced = await raw("/platformapi.v1.PlayerService/Get", big, asJson(project.privateKey));
    expectError(announced, 413, "resource_exhausted");
    const streamed = await fetch(`${svc.baseUrl}/platformapi.v1.PlayerService/Get`, {
      method: "POST",
      headers: asJson(project.privateKey),
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(big));
          controller.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expectError({ status: streamed.status, body: await streamed.json() }, 413, "resource_exhausted");
  });

  it("answers resource_exhausted over gRPC and with the Connect client", async () => {
    for (const protocol of ["grpc", "connect"] as const) {
      await expect(
        svc
          .client(PlayerService, protocol)
          .get({ partnerUserId: "x".repeat(MAX_BODY_BYTES) }, { headers: { "x-api-key": project.privateKey } }),
      ).rejects.toMatchObject({ code: Code.ResourceExhausted });
    }
  });

  it("still answers 429 with Retry-After when a key is rate limited", async () => {
    const limited = await startTestService({ RATE_LIMIT_PER_SECOND: "1", RATE_LIMIT_BURST: "1" });
    try {
      const statuses: number[] = [];
      let retryAfter: string | null = null;
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${limited.baseUrl}/platformapi.v1.AdminService/RotateSigningKey`, {
          method: "POST",
          headers: asJson(ADMIN_KEY),
          body: "{}",
        });
        statuses.push(res.status);
        if (res.status === 429) retryAfter = res.headers.get("retry-after");
      }
      expect(statuses).toContain(429);
      expect(retryAfter).not.toBeNull();
    } finally {
      await limited.stop();
    }
  });
});

describe("entitlements", () => {
  it("record owns: true when owns is left out, over /v1 and gRPC, and false only when sent", async () => {
    const user = randomUUID();
    const viaJson = await svc.postJson("/v1/admin/entitlements", { platform_user_id: user, game_id: 31 }, ADMIN_KEY);
    expect(viaJson.status).toBe(200);
    expect(viaJson.body.entitlement.owns).toBe(true);
    const viaGrpc = await svc
      .client(AdminService)
      .setEntitlement({ platformUserId: user, gameId: 32 }, { headers: { "x-api-key": ADMIN_KEY } });
    expect(viaGrpc.entitlement?.owns).toBe(true);
    const refund = await svc.postJson(
      "/v1/admin/entitlements",
      { platform_user_id: user, game_id: 31, owns: false },
      ADMIN_KEY,
    );
    expect(refund.body.entitlement.owns).toBe(false);
  });

  it("lets a user whose entitlement was recorded without owns launch the game", async () => {
    const game = await svc.createProject("Owns default");
    const { key: platformKey } = await svc.createKey("platform");
    const user = randomUUID();
    await svc.postJson("/v1/admin/entitlements", { platform_user_id: user, game_id: game.gameId }, ADMIN_KEY);
    const issued = await svc.postJson(
      "/v1/launch_tokens/issue",
      { platform_user_id: user, installation_id: randomUUID(), game_id: game.gameId },
      platformKey,
    );
    expect(issued.status).toBe(200);
  });
});

describe("pages", () => {
  it("are refused at 0 and below, for players/search and players/tags alike", async () => {
    for (const path of ["/v1/players/search", "/v1/players/tags"]) {
      for (const page of [0, -1, "0"]) {
        const res = await svc.postJson(path, { page }, project.privateKey);
        expectError(res, 400, "invalid_argument", "page");
      }
    }
  });

  it("default to 1 when absent, for players/search and players/tags alike", async () => {
    const search = await svc.postJson("/v1/players/search", {}, project.privateKey);
    expect(search.body.players_info.page).toBe(1);
    const tags = await svc.postJson("/v1/players/tags", {}, project.privateKey);
    expect(tags.status).toBe(200);
    expect(tags.body.tags_info.page).toBe(1);
  });

  it("are refused at 0 over gRPC too", async () => {
    await expect(
      svc.client(PlayerService).search({ page: 0 }, { headers: { "x-api-key": project.privateKey } }),
    ).rejects.toMatchObject({ code: Code.InvalidArgument });
  });
});
