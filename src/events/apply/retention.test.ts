import { describe, expect, it } from "vitest";
import { RetentionWindow } from "../rollup-keys.js";
import { Retention, SWEEP_STEP, type RetentionOptions } from "./retention.js";

/** Stores that count sweep steps; the queue's read fails while `failing`; the event ids take `idSteps` full steps. */
function stores(idSteps = 0) {
  const state = { failing: true, sweeps: 0, idSteps };
  const done = async () => {
    state.sweeps++;
    return 0;
  };
  const ids = async () => {
    state.sweeps++;
    return state.idSteps-- > 0 ? SWEEP_STEP : 0;
  };
  const options = {
    window: new RetentionWindow(400),
    queue: {
      read: async () => {
        if (state.failing) throw new Error("past its deadline");
        return { reserved: 0, accepted: 0, applied: 0, appliedEvents: 0 };
      },
    },
    segments: { deleteExpired: done },
    eventIds: { deleteExpired: ids },
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
    // One step a pass: the four parts in four passes.
    for (let pass = 0; pass < 4; pass++) await retention.sweepIfDue(new Date(start + 61_000 + pass));
    expect(state.sweeps).toBe(4);
    // Then hourly again.
    await retention.sweepIfDue(new Date(start + 61_000 + 30 * 60_000));
    expect(state.sweeps).toBe(4);
  });

  it("goes on with a part while its steps find a full step, one step a pass, then the next part", async () => {
    const { state, options } = stores(3);
    state.failing = false;
    const retention = new Retention(options);
    const start = Date.parse("2026-01-10T08:00:00Z");
    const passes = [];
    for (let pass = 0; pass < 8; pass++) {
      await retention.sweepIfDue(new Date(start + pass * 1000));
      passes.push(state.sweeps);
    }
    // Segments (1), the event ids' three full steps and their last (5), histories, cohorts: done after 7 passes.
    expect(passes).toEqual([1, 2, 3, 4, 5, 6, 7, 7]);
  });
});
