import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/service/main-process.js";
import { startOwnEngine } from "../../support/db/own-engine.js";
import { startTestService, type TestService } from "../../support/service/service.js";

// A service on a database server of its own (of the run's engine), which the test freezes with SIGSTOP.
const DB_TIMEOUT_MS = 2_000;
/** Slack for a loaded machine on top of the deadline, as in db-faults.test.ts. */
const SLACK_MS = 2_000;

let engine: Awaited<ReturnType<typeof startOwnEngine>>;
let svc: TestService;
beforeAll(async () => {
  engine = await startOwnEngine();
  svc = await startTestService({ DB_TIMEOUT_MS: String(DB_TIMEOUT_MS) }, { mongodbUri: engine.uri });
});
afterAll(async () => {
  await svc.stop();
  await engine.stop();
});

/** A POST that gives up after a bound, so a hang fails the test instead of stalling it. */
async function timedPost(path: string, body: object, key: string): Promise<{ status: number; ms: number }> {
  const started = Date.now();
  try {
    const res = await fetch(`${svc.baseUrl}${path}`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(20_000),
    });
    await res.arrayBuffer();
    return { status: res.status, ms: Date.now() - started };
  } catch {
    // Hung past the bound: no answer.
    return { status: 0, ms: Date.now() - started };
  }
}

describe("an engine frozen under load", () => {
  it("answers every ingest and players/update within the deadline, under load", async () => {
    const { publicKey } = await svc.createProject();
    const timestamp = new Date(svc.clock.now().getTime() - 60_000).toISOString();
    const ingest = (i: number) =>
      timedPost("/v1/events", { events: [{ name: "play", partner_user_id: `p${i}`, timestamp }] }, publicKey);
    const update = (i: number) =>
      timedPost("/v1/players/update", { players: [{ partner_user_id: `p${i}`, tags_add: ["vip"] }] }, publicKey);
    expect((await ingest(0)).status).toBe(200);
    expect((await update(0)).status).toBe(200);
    const { pid } = engine;
    process.kill(pid, "SIGSTOP");
    try {
      // Player updates alongside, queued per player (src/players): the round that finds the engine gone fails the
      // calls queued behind it on its player at once. Players not tagged yet: each call has something to write (one
      // that changes nothing may answer from what the instance holds, without the database).
      const [ingests, updates] = await Promise.all([
        Promise.all(Array.from({ length: 20 }, (_, i) => ingest(i))),
        Promise.all(Array.from({ length: 10 }, (_, i) => update(1 + (i % 3)))),
      ]);
      for (const [i, call] of [...ingests, ...updates].entries()) {
        const label = i < ingests.length ? `ingest ${i}` : `update ${i - ingests.length}`;
        expect(call.status, label).toBe(503);
        expect(call.ms, label).toBeLessThan(DB_TIMEOUT_MS + SLACK_MS);
      }
    } finally {
      process.kill(pid, "SIGCONT");
    }
    await waitFor(async () => (await ingest(99)).status === 200, 20_000, "ingest to succeed after SIGCONT");
  });
});
