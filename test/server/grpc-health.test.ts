import { once } from "node:events";
import http2 from "node:http2";
import type net from "node:net";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../../gen/grpc/health/v1/health_pb.js";
import { PlayerService } from "../../gen/platformapi/v1/players_pb.js";
import { registerHealth } from "../../src/server/health.js";
import { ensureGrpcurl, grpcurlUnavailable, runGrpcurl } from "../support/clients/grpcurl.js";
import { startTestService, type TestService } from "../support/service/service.js";

const noGrpcurl = await grpcurlUnavailable();
if (noGrpcurl) process.stderr.write(`skipping the grpcurl health test: ${noGrpcurl}\n`);

describe("grpc.health.v1.Health on the service", () => {
  let test: TestService;
  beforeAll(async () => {
    test = await startTestService();
  });
  afterAll(() => test.stop());

  it("answers SERVING for the server and each served service, without an API key", async () => {
    const health = test.client(Health, "grpc");
    expect((await health.check({ service: "" })).status).toBe(Status.SERVING);
    expect((await health.check({ service: "platformapi.v1.PlayerService" })).status).toBe(Status.SERVING);
    expect((await health.check({ service: "grpc.reflection.v1.ServerReflection" })).status).toBe(Status.SERVING);
    const list = await health.list({});
    expect(Object.keys(list.statuses)).toContain("platformapi.v1.LaunchTokenService");
  });

  it("answers NOT_FOUND for a service it does not serve", async () => {
    const error = await test
      .client(Health, "grpc")
      .check({ service: "platformapi.v1.Nope" })
      .catch((e: unknown) => ConnectError.from(e));
    expect(error).toMatchObject({ code: Code.NotFound, rawMessage: "unknown service platformapi.v1.Nope" });
  });

  it("sends the current status at once on Watch, and NOT_SERVING when the service closes", async () => {
    const own = await startTestService();
    const watch = own.client(Health, "grpc").watch({ service: "" })[Symbol.asyncIterator]();
    expect((await watch.next()).value?.status).toBe(Status.SERVING);
    const started = Date.now();
    const closed = own.service.close(10_000);
    expect((await watch.next()).value?.status).toBe(Status.NOT_SERVING);
    expect((await watch.next()).done).toBe(true);
    await closed;
    // The open Watch ends at once instead of holding the close for its 10 s of grace.
    expect(Date.now() - started).toBeLessThan(5_000);
    await own.database.db.dropDatabase();
    await own.database.close();
  });

  it.skipIf(noGrpcurl)("answers grpcurl's Check", async () => {
    const binary = await ensureGrpcurl();
    const address = `127.0.0.1:${test.service.port}`;
    const check = (service: string) =>
      runGrpcurl(binary, {
        address,
        command: ["grpc.health.v1.Health/Check"],
        flags: ["-d", JSON.stringify({ service })],
      });
    expect(await check("")).toMatchObject({ exitCode: 0, stdout: '{\n  "status": "SERVING"\n}\n' });
    expect(await check(PlayerService.typeName)).toMatchObject({ exitCode: 0, stdout: '{\n  "status": "SERVING"\n}\n' });
    const unknown = await check("platformapi.v1.Nope");
    expect(unknown.exitCode).not.toBe(0);
    expect(unknown.stderr).toContain("Code: NotFound");
  });
});

/** Resolves once `condition` holds; fails after 5 s. */
async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not reached in 5 s");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("readiness decides the status", () => {
  let ready = true;
  let checks = 0;
  let server: http2.Http2Server;
  let health: Client<typeof Health>;
  beforeAll(async () => {
    const handler = connectNodeAdapter({
      routes: (router) =>
        registerHealth(router, {
          readiness: async () => (checks++, ready),
          services: [PlayerService],
          watchIntervalMs: 10,
        }),
    });
    server = http2.createServer(handler).listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as net.AddressInfo;
    health = createClient(Health, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }));
  });
  afterAll(() => {
    server.close();
  });

  it("answers NOT_SERVING while readiness is false, SERVING again once it is true", async () => {
    ready = false;
    expect((await health.check({ service: "" })).status).toBe(Status.NOT_SERVING);
    expect((await health.check({ service: PlayerService.typeName })).status).toBe(Status.NOT_SERVING);
    ready = true;
    expect((await health.check({ service: "" })).status).toBe(Status.SERVING);
  });

  it("counts a readiness check that fails as NOT_SERVING", async () => {
    const handler = connectNodeAdapter({
      routes: (router) =>
        registerHealth(router, { readiness: () => Promise.reject(new Error("database down")), services: [] }),
    });
    const failing = http2.createServer(handler).listen(0, "127.0.0.1");
    await once(failing, "listening");
    const { port } = failing.address() as net.AddressInfo;
    const client = createClient(Health, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }));
    try {
      expect((await client.check({ service: "" })).status).toBe(Status.NOT_SERVING);
    } finally {
      failing.close();
    }
  });

  it("sends each change on Watch, once, until the caller goes", async () => {
    const abort = new AbortController();
    const watch = health.watch({ service: PlayerService.typeName }, { signal: abort.signal })[Symbol.asyncIterator]();
    expect((await watch.next()).value?.status).toBe(Status.SERVING);
    // A few checks with no change send nothing: the next message is the change.
    const seen = checks;
    await until(() => checks >= seen + 3);
    ready = false;
    expect((await watch.next()).value?.status).toBe(Status.NOT_SERVING);
    ready = true;
    expect((await watch.next()).value?.status).toBe(Status.SERVING);
    abort.abort();
    await expect(watch.next()).rejects.toMatchObject({ code: Code.Canceled });
  });

  it("sends SERVICE_UNKNOWN on Watch of an unknown service and keeps the call open", async () => {
    const abort = new AbortController();
    const watch = health.watch({ service: "platformapi.v1.Nope" }, { signal: abort.signal })[Symbol.asyncIterator]();
    expect((await watch.next()).value?.status).toBe(Status.SERVICE_UNKNOWN);
    const next = watch.next();
    abort.abort();
    await expect(next).rejects.toMatchObject({ code: Code.Canceled });
  });
});
