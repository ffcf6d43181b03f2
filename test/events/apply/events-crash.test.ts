import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { bruteForce, byName, eventTimes, queueOf, waitFor } from "../../support/service/events.js";
import { WorkerProcesses } from "../../support/service/worker-process.js";

/** Ingest only: the workers run in child processes that the test kills. */
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
  for (const crashAt of ["planned:2", "players-written:2", "cohorts-written:3"]) {
    it(
      `a worker SIGKILLed mid-apply (${crashAt}) and restarted applies each accepted event once`,
      { timeout: 300_000 },
      async () => {
        const { publicKey, privateKey, projectId } = await svc.createProject();
        await svc.postJson("/v1/players/update", { players: [{ partner_user_id: "p1", tags: ["crew"] }] }, publicKey);
        const times = eventTimes(svc, 2);
        const days = times.map((t) => t.day);
        const raw: { name: string; player: string; day: string }[] = [];
        for (let call = 0; call < 4; call++) {
          // 250 players a call: the player rollups of one segment take three write commands.
          const events = Array.from({ length: 500 }, (_, i) => {
            const player = `p${(i + call * 7) % 250}`;
            const { day, timestamp } = times[(i + call) % 2];
            raw.push({ name: `n${call % 2}`, player, day });
            return { name: `n${call % 2}`, partner_user_id: player, timestamp };
          });
          const res = await svc.postJson("/v1/events", { events }, publicKey);
          expect(res.body.accepted).toBe(500);
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
        // The stored histories hold every event once: the owner keeps them in memory a while, and a worker taking
        // over writes what the killed one had not, from the plans kept for it.
        const db = svc.database.db;
        await waitFor(
          () =>
            db
              .collection<{ _id: string; applied?: number; written?: number }>("event_queue")
              .findOne({ _id: "cursor" }),
          (cursor) => (cursor?.written ?? cursor?.applied) === cursor?.applied,
        );
        const histories = await db
          .collection<{ _id: string; days?: Record<string, Record<string, number>> }>("event_player_rollups")
          .find({ project_id: projectId })
          .toArray();
        const stored = histories.flatMap((doc) =>
          Object.values(doc.days ?? {}).flatMap((names) => Object.values(names)),
        );
        expect(stored.reduce((sum, events) => sum + Number(events), 0)).toBe(raw.length);
        await workers.stopAll();
      },
    );
  }
});
