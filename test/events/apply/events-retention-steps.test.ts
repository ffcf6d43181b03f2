import type { CommandStartedEvent, Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SWEEP_STEP } from "../../../src/events/apply/retention.js";
import { bruteForce, byName, eventTimes, queueOf, waitFor } from "../../support/service/events.js";
import { startTestService, TestClock, type TestService } from "../../support/service/service.js";

// A start after a stop longer than the retention window: what the window left behind is swept in bounded steps,
// one a pass of the apply worker, with the segments that wait applied between them.
// Two days: events a minute before midnight stay within it at the first start, and fall out of it three days later;
// their event_id claims too (the claims' window is the sweep's other half).
const RETENTION = { EVENT_RETENTION_DAYS: "2", EVENT_ID_WINDOW_DAYS: "2" };
/** Events of as many players: as many event_id claims and raw event documents (one a player, day and segment). */
const OLD_EVENTS = 2_500;

let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;
/**
 * The commands of the start after the stop on the swept collections, in order: each step of the sweep of claims (a
 * find and a delete of event_ids), each step of the sweep of raw events (a find of at most a step's `_id`s of
 * event_raw, then their deletes), each waiting segment's raw events (an insert into event_raw).
 */
const started: CommandStartedEvent[] = [];
/** The events queued during the stop (the worker off), and their days. */
let waiting: { name: string; partner_user_id: string; timestamp: string }[];
/** The day of the events the window leaves behind. */
let firstDay: string;

beforeAll(async () => {
  const before = await startTestService(RETENTION);
  project = await before.createProject();
  const [{ timestamp, day }] = eventTimes(before, 1);
  firstDay = day;
  for (let from = 0; from < OLD_EVENTS; from += 1_000) {
    const events = Array.from({ length: Math.min(1_000, OLD_EVENTS - from) }, (_, k) => ({
      name: "play",
      partner_user_id: `old-${from + k}`,
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
        if (collection === "event_ids" || collection === "event_raw") started.push(event);
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
    /** The old day's documents of a collection whose `_id`s begin `<project>/<day>/`. */
    const ofOldDay = { _id: { $gte: `${project.projectId}/${firstDay}/`, $lt: `${project.projectId}/${firstDay}0` } };
    // The sweep's last step drops the day's activity after its raw events.
    await waitFor(
      () => Promise.all([count("event_ids"), count("event_raw", ofOldDay), count("event_activity", ofOldDay)]),
      (left) => left.every((documents) => documents === 0),
      120_000,
    );
    const on = (name: string, collection: string) => (event: CommandStartedEvent) =>
      event.commandName === name && event.command[name] === collection;
    // The claims: steps of at most SWEEP_STEP `_id`s, as many as that takes (or more: a step that failed, its deadline
    // passed on a loaded machine, is taken again at the next pass).
    const steps = Math.ceil(OLD_EVENTS / SWEEP_STEP);
    const idSteps = started.filter(on("delete", "event_ids"));
    expect(idSteps.length).toBeGreaterThanOrEqual(steps);
    for (const { command } of idSteps) {
      const [{ q }] = command.deletes as { q: { $and: [{ _id: { $in: unknown[] } }] } }[];
      expect(q.$and[0]._id.$in.length).toBeLessThanOrEqual(SWEEP_STEP);
    }
    // The raw events: each step finds at most SWEEP_STEP of the old day's documents (one a player), then deletes them.
    const rawSteps = started.filter((event) => on("find", "event_raw")(event) && event.command.limit !== undefined);
    expect(rawSteps.length).toBeGreaterThanOrEqual(steps);
    for (const { command } of rawSteps) expect(command.limit).toBeLessThanOrEqual(SWEEP_STEP);
    const deletes = started.filter((event) => event.commandName === "delete");
    // Not all the sweep first: a waiting segment's raw events are written before its last step.
    const firstInsert = started.findIndex(on("insert", "event_raw"));
    expect(firstInsert).toBeGreaterThanOrEqual(0);
    expect(firstInsert).toBeLessThan(started.lastIndexOf(deletes.at(-1)!));

    // The new events count exactly.
    const day = waiting[0].timestamp.slice(0, 10);
    const trends = await svc.postOk("/v1/events/trends", { from: day, to: day }, project.privateKey);
    const raw = waiting.map((e) => ({ name: e.name, player: e.partner_user_id, day }));
    expect(byName(trends)).toEqual(bruteForce(raw, [day]));
  }, 240_000);
});
