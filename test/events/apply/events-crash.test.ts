import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { bruteForce, byName, eventTimes, queueOf, waitFor } from "../../support/service/events.js";
import { unpackEvents } from "../../../src/events/queue/segment-store.js";
import { WorkerProcesses } from "../../support/service/worker-process.js";

/**
 * Ingest only: the workers run in child processes that the test kills. Each starts once every call is queued, so on
 * the embedded engine its process is the only one writing meanwhile (one instance owns that database).
 */
let svc: TestService;
let workers: WorkerProcesses;
beforeAll(async () => {
  svc = await startTestService({ EVENT_WORKER: "off" });
  workers = new WorkerProcesses(svc);
});
afterAll(async () => {
  await workers.stopAll();
  await svc.stop();
});

describe("apply worker crashes", () => {
  // Twenty calls: two batches of the worker's (16 segments at most), each writing raw events and 120 activity chunks
  // (60 names on 2 days) in several commands on the embedded engine.
  for (const crashAt of ["event_raw:3", "event_activity:2", "advanced:1"]) {
    it(
      `a worker SIGKILLed mid-apply (${crashAt}) and restarted applies each accepted event once`,
      { timeout: 300_000 },
      async () => {
        const { publicKey, privateKey, projectId } = await svc.createProject();
        await svc.postJson("/v1/players/update", { players: [{ partner_user_id: "p1", tags: ["crew"] }] }, publicKey);
        const times = eventTimes(svc, 2);
        const days = times.map((t) => t.day);
        const raw: { name: string; player: string; day: string }[] = [];
        for (let call = 0; call < 20; call++) {
          const events = Array.from({ length: 100 }, (_, i) => {
            const player = `p${(i + call * 7) % 250}`;
            const { day, timestamp } = times[(i + call) % 2];
            const name = `n${(i + call) % 60}`;
            raw.push({ name, player, day });
            return { name, partner_user_id: player, timestamp };
          });
          const res = await svc.postJson("/v1/events", { events }, publicKey);
          expect(res.body.accepted).toBe(100);
        }

        const doomed = await workers.start("crash-point", crashAt);
        await workers.kill(doomed);
        expect(
          (
            await waitFor(
              () => queueOf(svc),
              (q) => q.queue_depth !== -1,
            )
          ).queue_depth,
        ).toBeGreaterThan(0);

        await workers.start("started");
        await waitFor(
          () => queueOf(svc),
          (q) => q.queue_depth === 0,
          240_000,
        );
        const range = { from: days[0], to: days[1] };
        const trends = await svc.postJson("/v1/events/trends", range, privateKey);
        expect(byName(trends.body)).toEqual(bruteForce(raw, days));
        const crew = await svc.postJson("/v1/events/trends", { ...range, tags: ["crew"] }, privateKey);
        expect(byName(crew.body)).toEqual(
          bruteForce(
            raw.filter((e) => e.player === "p1"),
            days,
          ),
        );
        // The raw events are kept once each: a raw document written again is the same document.
        const stored = await svc.database.db
          .collection<{ events: string }>("event_raw")
          .find({ project_id: projectId })
          .toArray();
        expect(stored.reduce((sum, doc) => sum + unpackEvents(doc.events).length, 0)).toBe(raw.length);
        await workers.stopAll();
      },
    );
  }
});
