import type { CommandStartedEvent } from "mongodb";
import { afterAll, describe, expect, it } from "vitest";
import { CATCH_UP_SEGMENTS } from "../../../src/events/apply/write-behind-schedule.js";
import { logLines } from "../../support/log-lines.js";
import { eventTimes, queueOf, waitFor } from "../../support/service/events.js";
import { startTestService, type TestService } from "../../support/service/service.js";

const SEGMENTS = 60;
const EVENTS_PER_SEGMENT = 100;

const running: TestService[] = [];
afterAll(() => running.at(-1)?.stop());

/** The queue's cursor as stored: what is applied, and through which segment the histories are written. */
const cursorOf = ({ db }: { db: TestService["database"]["db"] }) =>
  db
    .collection<{ _id: string; applied: number; written: number; events: number }>("event_queue")
    .findOne({ _id: "cursor" });

describe("the apply worker's first passes after a stop that left histories unwritten", () => {
  it("write them again from their plans in bounded steps, then apply the rest: every event counted once", async () => {
    const firstLog = logLines();
    const first = await startTestService({ LOG_LEVEL: "warn" }, { logDestination: firstLog.destination });
    running.push(first);
    const { publicKey, privateKey } = await first.createProject();
    const [{ timestamp }] = eventTimes(first, 1);
    const day = timestamp.slice(0, 10);
    // Every player tagged: a chart filtered by a tag and tags_none sums their histories (the owner's memory's).
    for (let from = 0; from < SEGMENTS * EVENTS_PER_SEGMENT; from += 100) {
      const players = Array.from({ length: 100 }, (_, k) => ({ device_id: `d-${from + k}`, tags_add: ["t"] }));
      await first.postOk("/v1/players/update", { players }, publicKey);
    }
    for (let s = 0; s < SEGMENTS; s++) {
      const events = Array.from({ length: EVENTS_PER_SEGMENT }, (_, k) => ({
        name: "play",
        device_id: `d-${s * EVENTS_PER_SEGMENT + k}`,
        timestamp,
      }));
      await first.postOk("/v1/events", { events }, publicKey);
    }
    // Stopped with no time left while the worker applies: the histories it applied wait in memory, unwritten.
    await waitFor(
      () => queueOf(first),
      (queue) => queue.queue_depth <= (SEGMENTS * EVENTS_PER_SEGMENT) / 2,
    );
    await first.service.close(0);
    await first.database.close();

    // The next start: each step marks what it wrote, at most CATCH_UP_SEGMENTS segments' plans read for it.
    const steps: { written: number; plansRead: number }[] = [];
    let plansRead = 0;
    const watch = (event: CommandStartedEvent) => {
      const { command } = event;
      if (event.commandName === "find" && command.find === "event_plans") plansRead++;
      const written = command.updates?.[0]?.u?.$set?.written;
      if (event.commandName === "update" && command.update === "event_queue" && written !== undefined) {
        steps.push({ written, plansRead });
        plansRead = 0;
      }
    };
    // What the stop left, read as the next start finds it (a pass of the stopped worker may end after its close).
    let left = { applied: 0, written: 0, events: 0 };
    const next = await startTestService(
      { DB_NAME: first.config.dbName },
      {
        beforeStart: async (database) => {
          left = (await cursorOf(database))!;
          database.client.on("commandStarted", watch);
        },
      },
    );
    running.push(next);
    expect(left.applied - left.written).toBeGreaterThan(CATCH_UP_SEGMENTS);
    // Ready: a chart counts every event applied before the stop, though their histories are not in the database yet.
    const filtered = { from: day, to: day, names: ["play"], tags: ["t"], tags_none: ["other"] };
    const early = await next.postOk("/v1/events/trends", filtered, privateKey);
    expect(early.series[0].points[0].events).toBeGreaterThanOrEqual(left.events);
    await waitFor(
      () => queueOf(next),
      (queue) => queue.queue_depth === 0,
      300_000,
    );
    next.database.client.off("commandStarted", watch);
    const catchUp = steps.filter((step) => step.written <= left.applied);
    expect(catchUp.at(-1)?.written).toBe(left.applied);
    expect(catchUp.length).toBeGreaterThanOrEqual(2);
    let from = left.written;
    for (const step of catchUp) {
      expect(step.written - from).toBeLessThanOrEqual(CATCH_UP_SEGMENTS);
      expect(step.plansRead).toBeLessThanOrEqual(CATCH_UP_SEGMENTS);
      from = step.written;
    }

    // The pass the stop cut short (its database closed under it) ended as in a crash, not as an error of the service's.
    const logged = firstLog.lines.map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(logged.filter((line) => line.level >= 50).map((line) => line.msg)).toEqual([]);

    const total = SEGMENTS * EVENTS_PER_SEGMENT;
    for (const body of [{ from: day, to: day, names: ["play"] }, filtered]) {
      const trends = await next.postOk("/v1/events/trends", body, privateKey);
      expect(trends.series[0].points).toEqual([expect.objectContaining({ events: total, players: total })]);
    }
  }, 600_000);
});
