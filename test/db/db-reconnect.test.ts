import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { DbProxy } from "../support/db/db-proxy.js";
import { waitFor } from "../support/service/main-process.js";
import { startTestService, type TestService } from "../support/service/service.js";

// The service reaches its database through a proxy the tests cut and restore.
const DB_TIMEOUT_MS = 1_000;
let proxy: DbProxy;
let svc: TestService;
beforeAll(async () => {
  proxy = await DbProxy.start(inject("mongodbUri"));
  // The key cache spares the requests in flight an API key lookup, which is not what these tests cut.
  svc = await startTestService(
    { DB_TIMEOUT_MS: String(DB_TIMEOUT_MS), API_KEY_CACHE_SECONDS: "300" },
    { mongodbUri: proxy.uri },
  );
});
// A failed test must not leave the next one without a database.
afterEach(() => proxy.restoreFor(svc.baseUrl));
afterAll(async () => {
  await proxy.restore();
  await svc.stop();
  proxy.cut();
});

const ready = async () => (await fetch(`${svc.baseUrl}/readyz`)).status === 200;

/** A project whose public key the service has cached. */
async function projectKey(): Promise<string> {
  const { publicKey } = await svc.createProject();
  const warm = await svc.postJson(
    "/v1/players/update",
    { players: [{ partner_user_id: "w", tags_add: ["x"] }] },
    publicKey,
  );
  expect(warm.status).toBe(200);
  return publicKey;
}

/** Requests that are in flight when the database goes; each answers, 200 or 503, never hangs. */
function updatesInFlight(publicKey: string, count: number): Promise<number[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      svc
        .postJson("/v1/players/update", { players: [{ partner_user_id: `p${i}`, tags_add: ["x"] }] }, publicKey)
        .then((res) => res.status),
    ),
  );
}

/**
 * The driver's monitor of the proxy's address, with its connection's socket: driver internals, read only to time a
 * heartbeat (see the test). Resolves once no heartbeat has ended for 600 ms, so a check asked for runs at once
 * rather than after the driver's 500 ms minimum between checks.
 */
async function idleMonitor(): Promise<{ requestCheck(): void; socket: NodeJS.EventEmitter }> {
  const client = svc.database.client;
  let lastEnded = Date.now();
  const ended = () => (lastEnded = Date.now());
  client.on("serverHeartbeatSucceeded", ended).on("serverHeartbeatFailed", ended);
  try {
    const servers = () => (client as unknown as { topology: { s: { servers: Map<string, any> } } }).topology.s.servers;
    const server = () => [...servers().values()][0];
    await waitFor(
      async () => Date.now() - lastEnded > 600 && server().monitor.connection?.closed === false,
      20_000,
      "an idle monitor",
    );
    return { requestCheck: () => server().requestCheck(), socket: server().monitor.connection.socket };
  } finally {
    client.off("serverHeartbeatSucceeded", ended).off("serverHeartbeatFailed", ended);
  }
}

/** The longest the service may stay unready once the database is back: a stuck monitor found (3 x deadline + 2 s), then slack. */
const RECOVERY_MS = 3 * DB_TIMEOUT_MS + 2_000 + 5_000;

/** Cuts the database under requests in flight, then restores it: the service must be ready again within RECOVERY_MS. */
async function blip(publicKey: string, onCut: () => void = () => {}): Promise<void> {
  const inFlight = updatesInFlight(publicKey, 5);
  proxy.cut();
  onCut();
  for (const status of await inFlight) expect([200, 503]).toContain(status);
  const restored = Date.now();
  await proxy.restore();
  await waitFor(ready, RECOVERY_MS + 5_000, "/readyz 200 after the database came back");
  expect(Date.now() - restored).toBeLessThan(RECOVERY_MS);
}

describe("a database blip", () => {
  it("recovers when the driver's monitor hangs on a heartbeat begun as the database closed its socket", async () => {
    const publicKey = await projectKey();
    const monitor = await idleMonitor();
    // Under load, a heartbeat asked for by a failing operation can start between the monitor socket's destruction
    // and its "close" event; driver 7 then waits forever for a "drain". Asking for the check right there makes
    // that moment certain instead of one run in several. The hang shows at the next blip that marks the server
    // Unknown: only a live monitor marks it known again.
    await blip(publicKey, () => monitor.socket.once("finish", () => queueMicrotask(() => monitor.requestCheck())));
    for (let cycle = 0; cycle < 3; cycle++) await blip(publicKey);
    const after = await svc.postJson(
      "/v1/players/update",
      { players: [{ partner_user_id: "z", tags_add: ["y"] }] },
      publicKey,
    );
    expect(after.status).toBe(200);
  });

  it("is over for the service within seconds of the database answering again, cut after cut", async () => {
    const publicKey = await projectKey();
    for (let cycle = 0; cycle < 3; cycle++) await blip(publicKey);
  });
});
