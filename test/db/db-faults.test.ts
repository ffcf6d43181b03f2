import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/platformapi/v1/admin_pb.js";
import type { EmbeddedDb } from "../../src/db/embedded.js";
import { waitFor } from "../support/service/main-process.js";
import { startOwnFerretDb } from "../support/db/own-engine.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

// A service on a supervised embedded database of its own, which the tests stop and kill.
const DB_TIMEOUT_MS = 2_000;
const READY_TIMEOUT_MS = 300;
/** Slack for a loaded machine on top of a deadline (3.1 s seen at load 15); a stall without deadlines lasts until SIGCONT. */
const SLACK_MS = 2_000;

let engine: Awaited<ReturnType<typeof startOwnFerretDb>>;
let embedded: EmbeddedDb;
let test: TestService;
beforeAll(async () => {
  engine = await startOwnFerretDb();
  embedded = engine.embedded;
  test = await startTestService(
    { DB_TIMEOUT_MS: String(DB_TIMEOUT_MS), READY_TIMEOUT_MS: String(READY_TIMEOUT_MS) },
    { mongodbUri: embedded.uri },
  );
});
afterAll(async () => {
  await test.stop();
  await engine.stop();
});

const entitlement = {
  platform_user_id: "7f1c2a4e-0000-4000-8000-0000000000aa",
  game_id: 1,
  owns: true,
  source: "STORE",
  channel_id: "stable",
  build_version: "1.0.0",
};

/** A GET that gives up after a bound, so a hang fails the test instead of stalling it. */
async function timedGet(url: string): Promise<{ status: number; ms: number }> {
  const started = Date.now();
  const res = await fetch(url, { signal: AbortSignal.timeout(8_000) });
  await res.arrayBuffer();
  return { status: res.status, ms: Date.now() - started };
}

async function timedWrite(gameId: number): Promise<{ status: number; body: unknown; ms: number }> {
  const started = Date.now();
  const res = await fetch(`${test.baseUrl}/v1/admin/entitlements`, {
    method: "POST",
    headers: { "x-api-key": ADMIN_KEY, "content-type": "application/json" },
    body: JSON.stringify({ ...entitlement, game_id: gameId }),
    signal: AbortSignal.timeout(8_000),
  });
  return { status: res.status, body: await res.json(), ms: Date.now() - started };
}

async function isReady(): Promise<boolean> {
  return (await fetch(`${test.baseUrl}/readyz`)).status === 200;
}

describe("a stalled embedded database", () => {
  it("makes calls fail within the deadline with 503 and /readyz red, then green after SIGCONT", async () => {
    expect((await timedWrite(1)).status).toBe(200);
    const pid = embedded.pid!;
    process.kill(pid, "SIGSTOP");
    try {
      const admin = test.client(AdminService, "grpc");
      const grpcStarted = Date.now();
      const [writes, grpc, ready, healthz] = await Promise.all([
        Promise.all([2, 3, 4, 5, 6].map(timedWrite)),
        admin
          .setEntitlement(
            { platformUserId: entitlement.platform_user_id, gameId: 7, owns: true },
            { headers: { "x-api-key": ADMIN_KEY }, timeoutMs: 8_000 },
          )
          .then(
            () => ({ code: undefined, ms: Date.now() - grpcStarted }),
            (error: unknown) => ({ code: ConnectError.from(error).code, ms: Date.now() - grpcStarted }),
          ),
        timedGet(`${test.baseUrl}/readyz`),
        timedGet(`${test.baseUrl}/healthz`),
      ]);
      for (const write of writes) {
        expect(write.status).toBe(503);
        expect(write.body).toEqual({ code: "unavailable", message: "database unavailable, try again later" });
        expect(write.ms).toBeLessThan(DB_TIMEOUT_MS + SLACK_MS);
      }
      expect(grpc.code).toBe(Code.Unavailable);
      expect(grpc.ms).toBeLessThan(DB_TIMEOUT_MS + SLACK_MS);
      expect(ready.status).toBe(503);
      expect(ready.ms).toBeLessThan(READY_TIMEOUT_MS + SLACK_MS);
      expect(healthz.status).toBe(200);
    } finally {
      process.kill(pid, "SIGCONT");
    }
    await waitFor(isReady, 10_000, "/readyz to turn green after SIGCONT");
    expect((await timedWrite(8)).status).toBe(200);
  });
});

describe("a killed embedded database", () => {
  it("is restarted, and the service is ready again without a restart of its own, its data intact", async () => {
    const { projectId } = await test.createProject("Survives a kill");
    const pid = embedded.pid!;
    process.kill(pid, "SIGKILL");
    await waitFor(async () => embedded.pid !== pid && (await isReady()), 20_000, "the database to be restarted");
    expect(embedded.pid).not.toBe(pid);

    expect((await timedWrite(9)).status).toBe(200);
    const again = await test.postJson("/v1/admin/api_keys", { type: "private", project_id: projectId }, ADMIN_KEY);
    expect(again.status).toBe(200);
  });
});
