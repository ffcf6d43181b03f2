import type { CommandStartedEvent, Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SWEEP_STEP } from "../../../src/events/apply/retention.js";
import { bruteForce, byName, eventTimes, queueOf, waitFor } from "../../support/service/events.js";
import { startTestService, TestClock, type TestService } from "../../support/service/service.js";

// A start after a stop longer than the retention window: what the window left behind is swept in bounded steps,
// one a pass of the apply worker, with the segments that wait applied between them.
// Two days: events a minute before midnight stay within it at the first start, and fall out of it three days later.
const RETENTION = { EVENT_RETENTION_DAYS: "2" };
const OLD_EVENTS = 2_500;
const SWEPT = new Set(["event_segments", "event_ids", "event_player_rollups", "event_cohort_rollups"]);

let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;
/** The commands of the start after the stop, in order: each sweep step's delete, each segment's plan. */
const started: CommandStartedEvent[] = [];
/** The events queued during the stop (the worker off), and their days. */
let waiting: { name: string; partner_user_id: string; timestamp: string }[];

beforeAll(async () => {
  const before = await startTestService(RETENTION);
  project = await before.createProject();
  const [{ timestamp }] = eventTimes(before, 1);
  for (let from = 0; from < OLD_EVENTS; from += 1_000) {
    const events = Array.from({ length: Math.min(1_000, OLD_EVENTS - from) }, (_, k) => ({
      name: "play",
      partner_user_id: `old-${(from + k) % 50}`,
      timestamp,
      event_id: `e-${from + k}`,
    }));
    await before.postOk("/v1/events", { events }, project.publicKey);
  }
  await waitFor(
    () => queueOf(before),
    (queue) => queue.queue_depth === 0,
    120_000,
  );
  await before.service.close();
  await before.database.close();

  // Three days later, the worker still off: three calls queue while nothing applies.
  const clock = new TestClock();
  clock.advance(3 * 86_400_000);
  const env = { ...RETENTION, DB_NAME: before.config.dbName };
  const stopped = await startTestService({ ...env, EVENT_WORKER: "off" }, { clock });
  const [now] = eventTimes(stopped, 1);
  waiting = Array.from({ length: 30 }, (_, i) => ({
    name: "play",
    partner_user_id: `new-${i}`,
    timestamp: now.timestamp,
  }));
  for (let call = 0; call < 3; call++) {
    await stopped.postOk("/v1/events", { events: waiting.slice(10 * call, 10 * call + 10) }, project.publicKey);
  }
  await stopped.service.close();
  await stopped.database.close();

  svc = await startTestService(env, {
    clock,
    beforeStart: (database) =>
      database.client.on("commandStarted", (event) => {
        const collection = String(event.command[event.commandName]);
        if ((event.commandName === "delete" && SWEPT.has(collection)) || collection === "event_plans") {
          started.push(event);
        }
      }),
  });
}, 240_000);
afterAll(() => svc?.stop());

const count = (collection: string, filter: Document = {}) =>
  svc.database.db.collection(collection).countDocuments(filter);

describe("the retention sweep after a long stop", () => {
  it("deletes in steps of at most SWEEP_STEP, the waiting segments applied between them; then counts exactly", async () => {
    await waitFor(
      () => queueOf(svc),
      (queue) => queue.queue_depth === 0,
      120_000,
    );
    await waitFor(
      () => count("event_ids"),
      (left) => left === 0,
      120_000,
    );
    const deletes = started.filter((event) => event.commandName === "delete");
    const idSteps = deletes.filter((event) => event.command.delete === "event_ids");
    expect(idSteps).toHaveLength(Math.ceil(OLD_EVENTS / SWEEP_STEP));
    for (const { command } of deletes) {
      const [{ q }] = command.deletes as { q: { $and: [{ _id: { $in: unknown[] } }] } }[];
      expect(q.$and[0]._id.$in.length).toBeLessThanOrEqual(SWEEP_STEP);
    }
    // Not all the sweep first: a waiting segment's plan is stored before its last step.
    const firstPlan = started.findIndex((event) => event.command.insert === "event_plans");
    expect(firstPlan).toBeGreaterThanOrEqual(0);
    expect(firstPlan).toBeLessThan(started.lastIndexOf(deletes.at(-1)!));

    // The idle players' histories went; the new ones count exactly.
    await waitFor(
      () => count("event_player_rollups", { _id: { $regex: "/u:old-" } }),
      (left) => left === 0,
    );
    const day = waiting[0].timestamp.slice(0, 10);
    const trends = await svc.postOk("/v1/events/trends", { from: day, to: day }, project.privateKey);
    const raw = waiting.map((e) => ({ name: e.name, player: e.partner_user_id, day }));
    expect(byName(trends)).toEqual(bruteForce(raw, [day]));
  });
});
