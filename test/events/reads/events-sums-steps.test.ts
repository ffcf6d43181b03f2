import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CohortModel, sorted } from "../../support/models/cohort-model.js";
import { byName, eventTimes, queueOf, waitFor, type EventTime } from "../../support/service/events.js";
import { startTestService, type TestService } from "../../support/service/service.js";
import { WorkerProcesses } from "../../support/service/worker-process.js";

/**
 * A sum's back-fill in steps of whole days (EVENT_SUM_BACKFILL_STEP=5 raw events, less than a day holds here): the
 * events are sent on 3 days, so a back-fill takes 3 steps. The workers run in child processes that a test kills
 * within a step; the service beside them ingests, so the suite needs an engine that isolates updates per document.
 */
const STEP = { EVENT_SUM_BACKFILL_STEP: "5" };
const SUM = { property: "amount", names: ["purchase"] };
const CALL = 10;

let svc: TestService;
let workers: WorkerProcesses;
beforeAll(async () => {
  svc = await startTestService({ EVENT_WORKER: "off", ...STEP });
  workers = new WorkerProcesses(svc, STEP);
});
afterAll(async () => {
  await workers.stopAll();
  await svc.stop();
});

type Who = { partner?: string; device?: string };

/** A project, its brute force, and the events sent to it. */
class Game {
  readonly model = new CohortModel();
  readonly times: EventTime[];
  private sent = 0;

  private constructor(readonly project: Awaited<ReturnType<TestService["createProject"]>>) {
    this.times = eventTimes(svc, 3);
  }

  static async start(): Promise<Game> {
    return new Game(await svc.createProject());
  }

  /** One call (a segment): an event of `name` by each of `who`, on one day, with amounts of every kind. */
  async send(name: string, who: readonly Who[]): Promise<void> {
    const time = this.times[this.sent % this.times.length];
    const events = who.map((one) => {
      const amount = [2.5, 0.1, "7", 19.99, undefined, 3][this.sent++ % 6];
      const properties: Record<string, string | number> = amount === undefined ? { level: 1 } : { amount };
      this.model.event(name, one, time.day, properties);
      return {
        name,
        ...(one.partner && { partner_user_id: one.partner }),
        ...(one.device && { device_id: one.device }),
        timestamp: time.timestamp,
        properties,
      };
    });
    expect((await svc.postOk("/v1/events", { events }, this.project.privateKey)).accepted).toBe(events.length);
  }

  /** `calls` calls of purchases, each by CALL players of 3 × CALL. */
  async purchases(calls: number): Promise<void> {
    for (let call = 0; call < calls; call++) {
      await this.send(
        "purchase",
        Array.from({ length: CALL }, (_, i) => ({ partner: `p${(call * CALL + i) % (3 * CALL)}` })),
      );
    }
  }

  enable() {
    return svc.postJson(
      "/v1/events/properties/update",
      { name: "purchase", property: "amount", sum: true },
      this.project.privateKey,
    );
  }

  async expectBruteForce(): Promise<void> {
    const days = this.times.map((t) => t.day);
    const range = { from: days[0], to: days.at(-1)!, sum: "amount" };
    const res = await svc.postJson("/v1/events/trends", range, this.project.privateKey);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(sorted(byName(res.body))).toEqual(sorted(this.model.trends({}, days, SUM)));
  }
}

const drained = () =>
  waitFor(
    () => queueOf(svc),
    (queue) => queue.queue_depth === 0,
    120_000,
  );

describe("a sum's back-fill in steps", () => {
  it(
    "of many steps equals a brute force: events sent meanwhile, a retried update and a device folded counted once",
    { timeout: 180_000 },
    async () => {
      const game = await Game.start();
      await game.purchases(5);
      await game.send("purchase", [{ device: "d1" }, { device: "d2" }, { partner: "p1" }]);
      await game.send("level", [{ partner: "p2" }]);
      await workers.start("started");
      await drained();
      // Events sent while the back-fill runs land before or after the sum's segment: counted once either way.
      const [first, retried] = await Promise.all([
        game.enable(),
        game.enable(),
        game.purchases(3),
        game.send("purchase", [{ device: "d1" }]),
        svc.postOk(
          "/v1/players/update",
          { players: [{ partner_user_id: "p1", device_id: "d1" }] },
          game.project.privateKey,
        ),
      ]);
      game.model.link("d1", "p1");
      expect([first.status, retried.status]).toEqual([200, 200]);
      const listed = await svc.postOk("/v1/events/properties", {}, game.project.privateKey);
      expect(listed.properties).toEqual([{ name: "purchase", property: "amount", sum: true }]);
      await drained();
      await game.expectBruteForce();
      await workers.stopAll();
    },
  );

  // The worker's writes are counted from its start: the project's calls (one batch: one write of activity, one move
  // of the cursor), then the sum's first step, then each next step. Before a step's write of totals, after a step
  // moved the cursor past it, and after a step queued the next before the cursor moved (the restarted worker queues
  // it again; reaching the second proves three steps).
  for (const crashAt of ["event_activity:2", "event_activity:3", "advanced:2", "sum-step-queued:2"]) {
    it(
      `a worker SIGKILLed mid-back-fill (${crashAt}) and restarted counts each event once`,
      { timeout: 180_000 },
      async () => {
        const game = await Game.start();
        await game.purchases(4);
        const enabling = game.enable();
        const doomed = await workers.start("crash-point", crashAt);
        await workers.kill(doomed);
        // After the sum's segment, queued while no worker runs: counted by their apply.
        await game.purchases(2);
        await workers.start("started");
        expect((await enabling).status).toBe(200);
        await drained();
        await game.expectBruteForce();
        await workers.stopAll();
      },
    );
  }
});
