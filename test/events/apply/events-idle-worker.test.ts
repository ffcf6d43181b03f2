import type { CommandStartedEvent } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../support/service/events.js";
import { startTestService, type TestService } from "../../support/service/service.js";

/** The worker's quiet poll: 4 × its 250 ms, once 8 passes in a row found nothing (worker.ts). */
const QUIET_POLL_MS = 1_000;
/** A timer fires no earlier than asked, but libuv rounds to the millisecond. */
const TIMER_ROUNDING_MS = 2;

let svc: TestService;
const looked: number[] = [];
/** The worker's look at every project's queue (its pass's read of the whole collection). */
const watch = (event: CommandStartedEvent) => {
  const filter = (event.command.filter ?? {}) as object;
  if (event.commandName === "find" && event.command.find === "event_queues" && Object.keys(filter).length === 0) {
    looked.push(performance.now());
  }
};
beforeAll(async () => {
  svc = await startTestService({}, { beforeStart: (database) => void database.client.on("commandStarted", watch) });
});
afterAll(() => svc.stop());

describe("an apply worker with nothing to do", () => {
  it("looks at the queue once a second once it has been quiet (the start's reads and 8 passes of 250 ms)", async () => {
    await waitFor(
      async () => looked.length,
      (count) => count >= 19,
    );
    const gaps = looked.slice(1).map((at, i) => at - looked[i]);
    // The first passes look every 250 ms; the last 4 gaps are the quiet poll's.
    for (const gap of gaps.slice(-4)) expect(gap).toBeGreaterThanOrEqual(QUIET_POLL_MS - TIMER_ROUNDING_MS);
  });
});
