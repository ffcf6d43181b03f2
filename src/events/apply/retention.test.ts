import { describe, expect, it } from "vitest";
import { Retention, type RetentionOptions } from "./retention.js";

/** Stores that count sweeps; the queue's read fails while `failing`. */
function stores() {
  const state = { failing: true, sweeps: 0 };
  const done = async () => {
    state.sweeps++;
    return 0;
  };
  const options = {
    days: 400,
    queue: {
      read: async () => {
        if (state.failing) throw new Error("past its deadline");
        return { reserved: 0, accepted: 0, applied: 0, appliedEvents: 0 };
      },
    },
    segments: { deleteExpired: done },
    eventIds: { deleteExpired: done },
    playerRollups: { deleteIdle: done },
    cohortRollups: { deleteBefore: done },
  } as unknown as RetentionOptions;
  return { state, options };
}

describe("the retention sweep", () => {
  it("is tried again a minute after a failed pass, not an hour", async () => {
    const { state, options } = stores();
    const retention = new Retention(options);
    const start = Date.parse("2026-01-10T08:00:00Z");
    await expect(retention.sweepIfDue(new Date(start))).rejects.toThrow("past its deadline");
    state.failing = false;
    await retention.sweepIfDue(new Date(start + 30_000));
    expect(state.sweeps).toBe(0);
    await retention.sweepIfDue(new Date(start + 61_000));
    expect(state.sweeps).toBe(4);
    // Then hourly again.
    await retention.sweepIfDue(new Date(start + 61_000 + 30 * 60_000));
    expect(state.sweeps).toBe(4);
  });
});
