import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service/service.js";

const STUDIO = "https://studio.example.com";
let svc: TestService;
let privateKey: string;

beforeAll(async () => {
  svc = await startTestService({ CORS_ORIGINS: `${STUDIO}, http://localhost:5173` });
  ({ privateKey } = await svc.createProject());
});
afterAll(() => svc?.stop());

const preflight = (path: string, origin: string, headers = "content-type, x-api-key") =>
  fetch(svc.baseUrl + path, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": headers },
  });

describe("CORS", () => {
  it("answers a preflight from a listed origin on /v1 and on the RPC paths", async () => {
    for (const path of ["/v1/players/tags", "/platformapi.v1.PlayerService/ListTags"]) {
      const res = await preflight(path, STUDIO);
      expect(res.status).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe(STUDIO);
      expect(res.headers.get("access-control-allow-methods")).toBe("POST, GET");
      const allowed = res.headers.get("access-control-allow-headers")!.split(", ");
      expect(allowed).toEqual(
        expect.arrayContaining(["Content-Type", "Connect-Protocol-Version", "X-Grpc-Web", "X-User-Agent", "x-api-key"]),
      );
    }
  });

  it("lets a listed origin read the answer, with the gRPC-Web and Connect headers exposed", async () => {
    const res = await fetch(svc.baseUrl + "/v1/players/tags", {
      method: "POST",
      headers: { origin: "http://localhost:5173", "content-type": "application/json", "x-api-key": privateKey },
      body: JSON.stringify({ page: 1 }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("http://localhost:5173");
    expect(res.headers.get("access-control-expose-headers")!.split(", ")).toEqual(
      expect.arrayContaining(["Grpc-Status", "Grpc-Message", "Retry-After"]),
    );
    // An error answer is readable too, or a browser client could not show the service's message.
    const refused = await fetch(svc.baseUrl + "/platformapi.v1.PlayerService/ListTags", {
      method: "POST",
      headers: { origin: STUDIO, "content-type": "application/json", "connect-protocol-version": "1" },
      body: "{}",
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("access-control-allow-origin")).toBe(STUDIO);
  });

  it("gives an unlisted origin, or a path outside the API, no CORS headers", async () => {
    const unlisted = await preflight("/v1/players/tags", "https://evil.example.com");
    expect(unlisted.headers.get("access-control-allow-origin")).toBeNull();
    expect(unlisted.status).not.toBe(204);
    const answer = await fetch(svc.baseUrl + "/v1/players/tags", {
      method: "POST",
      headers: { origin: "https://evil.example.com", "content-type": "application/json", "x-api-key": privateKey },
      body: "{}",
    });
    expect(answer.headers.get("access-control-allow-origin")).toBeNull();
    expect(answer.headers.get("vary")).toBe("Origin");
    expect((await preflight("/metrics", STUDIO)).headers.get("access-control-allow-origin")).toBeNull();
  });

  it("answers no origin without CORS_ORIGINS, and refuses a value that is not an origin", async () => {
    const plain = await startTestService();
    try {
      const res = await fetch(plain.baseUrl + "/v1/players/tags", {
        method: "OPTIONS",
        headers: { origin: STUDIO, "access-control-request-method": "POST" },
      });
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
    } finally {
      await plain.stop();
    }
    await expect(startTestService({ CORS_ORIGINS: "https://studio.example.com/path" })).rejects.toThrow(
      "CORS_ORIGINS: https://studio.example.com/path is not an origin",
    );
  });
});
