import { randomBytes } from "node:crypto";
import http from "node:http";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { CommandStartedEvent } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/platformapi/v1/admin_pb.js";
import type { Database } from "../../src/db/database.js";
import { ADMIN_KEY, startTestService, TestClock, type TestService } from "../support/service/service.js";

const BURST = 5;
const PER_MINUTE = 1;
const CACHE_SECONDS = 300;

let svc: TestService;
/** Every api_keys lookup the service makes, seen by the driver. */
let keyLookups = 0;
const clock = new TestClock();

beforeAll(async () => {
  const env = {
    AUTH_FAILURES_PER_MINUTE: String(PER_MINUTE),
    AUTH_FAILURES_BURST: String(BURST),
    API_KEY_CACHE_SECONDS: String(CACHE_SECONDS),
  };
  // The service's own database client monitors its commands, so the test counts its lookups.
  const countLookups = (database: Database) =>
    database.client.on("commandStarted", (event: CommandStartedEvent) => {
      if (event.commandName === "find" && event.command.find === "api_keys") keyLookups++;
    });
  svc = await startTestService(env, { clock, beforeStart: countLookups });
});
afterAll(() => svc.stop());

interface Answer {
  status: number;
  body: { code?: string };
  retryAfter: string | undefined;
}

/** An authenticated /v1 call from `localAddress` (any 127.x address reaches the loopback listener). */
function call(apiKey: string, localAddress = "127.0.0.1", path = "/v1/admin/entitlements"): Promise<Answer> {
  const body = JSON.stringify({ platform_user_id: "7f1c2a4e-0000-4000-8000-0000000000aa", game_id: 9 });
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port: svc.service.port,
        localAddress,
        method: "POST",
        path,
        agent: false,
        headers: { "content-type": "application/json", "x-api-key": apiKey },
      },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString()));
        res.on("end", () =>
          resolve({
            status: res.statusCode!,
            body: JSON.parse(text) as Answer["body"],
            retryAfter: res.headers["retry-after"] as string | undefined,
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function createAdminKey(): Promise<string> {
  const res = await fetch(`${svc.baseUrl}/v1/admin/api_keys`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": ADMIN_KEY },
    body: JSON.stringify({ type: "admin" }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { key: string }).key;
}

const randomKey = () => "sk_" + randomBytes(32).toString("base64url");

describe("a flood of unknown API keys", () => {
  it("is answered 429 from one address after the burst, without a database lookup for each key", async () => {
    // A key in use from the flooding address and one not used yet, both made before the flood.
    expect((await call(ADMIN_KEY)).status).toBe(200);
    const unusedKey = await createAdminKey();

    const started = Date.now();
    const lookupsBefore = keyLookups;
    const answers = await Promise.all(Array.from({ length: 60 }, () => call(randomKey())));
    const elapsedMinutes = (Date.now() - started) / 60_000;
    const lookups = keyLookups - lookupsBefore;

    // The address spends its burst, then its refill; everything beyond is refused before any lookup.
    const allowed = BURST + Math.ceil(elapsedMinutes * PER_MINUTE);
    expect(lookups).toBeLessThanOrEqual(allowed);
    expect(answers.filter((a) => a.status === 401).length).toBeLessThanOrEqual(allowed);
    const limited = answers.filter((a) => a.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(answers.length - allowed);
    for (const answer of limited) {
      expect(answer.body.code).toBe("resource_exhausted");
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
    }

    // Over gRPC (the router's own path, not /v1) the same address is just as spent.
    const grpc = createClient(AdminService, createGrpcTransport({ baseUrl: svc.baseUrl }));
    const overGrpc = grpc.setEntitlement(
      { platformUserId: "7f1c2a4e-0000-4000-8000-0000000000aa", gameId: 9 },
      { headers: { "x-api-key": randomKey() } },
    );
    await expect(overGrpc).rejects.toMatchObject({ code: Code.ResourceExhausted });

    // The key already in use from that address still works; an unknown one is refused before its lookup.
    expect((await call(ADMIN_KEY)).status).toBe(200);
    expect((await call(unusedKey)).status).toBe(429);
    // From another address the same key is looked up and passes.
    expect((await call(unusedKey, "127.0.0.2")).status).toBe(200);
  });

  it("reads a key that was good again without spending an attempt, so it passes while the address is spent", async () => {
    clock.advance((CACHE_SECONDS + 1) * 1000); // every cached answer is stale (and the address has its burst back)
    await Promise.all(Array.from({ length: 2 * BURST }, () => call(randomKey(), "127.0.0.4")));
    expect((await call(randomKey(), "127.0.0.4")).status).toBe(429);

    const lookupsBefore = keyLookups;
    expect((await call(ADMIN_KEY, "127.0.0.4")).status).toBe(200);
    expect(keyLookups - lookupsBefore).toBe(1);
  });

  it("lets concurrent first requests with a new key share one read, so all of them pass", async () => {
    const key = await createAdminKey();
    const lookupsBefore = keyLookups;
    const answers = await Promise.all(Array.from({ length: 4 * BURST }, () => call(key, "127.0.0.5")));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(keyLookups - lookupsBefore).toBe(1);
  });

  it("looks an unknown key up once, then answers from the negative cache", async () => {
    const key = randomKey();
    const lookupsBefore = keyLookups;
    for (let i = 0; i < 3; i++) expect((await call(key, "127.0.0.3")).status).toBe(401);
    expect(keyLookups - lookupsBefore).toBe(1);
  });
});
