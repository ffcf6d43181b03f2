import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { queueOf, waitFor } from "../../support/service/events.js";

const CHILD = fileURLToPath(new URL("../../support/service/reserve-crash-child.ts", import.meta.url));

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

describe("/readyz queue_depth and lag_seconds", () => {
  it("come from the queue's real state: an ingest killed mid-call neither stops the lag nor leaves a depth", async () => {
    const { projectId, publicKey, privateKey } = await svc.createProject();
    const timestamp = new Date(svc.clock.now().getTime() - 10 * 60_000).toISOString();
    const day = timestamp.slice(0, 10);
    const ingest = async (count: number) => {
      const events = Array.from({ length: count }, (_, i) => ({ name: "play", partner_user_id: `p${i}`, timestamp }));
      expect((await svc.postJson("/v1/events", { events }, publicKey)).body.accepted).toBe(count);
    };
    await ingest(3);
    await waitFor(
      () => queueOf(svc),
      (q) => q.queue_depth === 0,
    );
    // kill -9 of an ingest between its sequence number and its segment.
    const args = ["--import", "tsx", CHILD, inject("mongodbUri"), svc.config.dbName, projectId];
    const child = spawn(process.execPath, args, { stdio: "ignore" });
    const [, signal] = await once(child, "exit");
    expect(signal).toBe("SIGKILL");
    await ingest(5);
    // The 5 wait behind the missing segment: they are the depth, and their age the lag.
    const waiting = await queueOf(svc);
    expect(waiting.queue_depth).toBe(5);
    expect(waiting.lag_seconds).toBeGreaterThan(0);
    // The worker gives the missing segment up after 30 s of the service's time; then all is applied.
    svc.clock.advance(31_000);
    await waitFor(
      () => queueOf(svc),
      (q) => q.queue_depth === 0 && q.lag_seconds === 0,
    );
    const names = await svc.postJson("/v1/events/names", { from: day, to: day }, privateKey);
    expect(names.body.names).toEqual([{ name: "play", events: "8" }]);
  });
});
