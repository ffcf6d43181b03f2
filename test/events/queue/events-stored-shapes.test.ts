import { Long } from "mongodb";
import { describe, expect, it } from "vitest";
import { engineOf } from "../../../src/db/engine.js";
import { countsChange } from "../../../src/events/rollups/cohort-rollup-store.js";
import type { QueuedEvent } from "../../../src/events/queue/entries.js";
import type { Plan } from "../../../src/events/apply/plan.js";
import { PlanStore } from "../../../src/events/rollups/plan-store.js";
import { SegmentStore, sequenceId } from "../../../src/events/queue/segment-store.js";
import { scratchDatabase } from "../../support/db/scratch-database.js";

const database = scratchDatabase("stored_shapes");

const events: QueuedEvent[] = [
  { n: "level_up", u: "alice", d: null, t: new Date("2026-01-02T03:04:05.678Z"), i: "e1", p: '{"level":3}' },
  { n: 'match "end"', u: null, d: "dev-1", t: new Date("2025-12-31T23:59:59.999Z"), i: null, p: null },
];

const plan: Plan = {
  players: [
    {
      id: "prj/u:alice",
      inc: { "days.2026-01-02.n0": 1 },
      set: { cohorts: ["t/vip"], trait_keys: [], folded_into: null, last_day: "2026-01-02" },
      unset: [],
      init: { project_id: "prj", identity_key: "u:alice" },
    },
  ],
  // Past 2^53: the packed counts of a cohort must come back exact.
  cohorts: [{ id: "prj/c", inc: { "days.2026-01-02.n0": countsChange(2 ** 22, 3) }, init: { cohort: "t/vip" } }],
  backfill: { key: "tier", holders: ["u:alice"] },
};

describe("queue segments and plans as stored", () => {
  it("a segment's events are one string, and read back as they were written", async () => {
    const segments = new SegmentStore(database().db);
    const receivedAt = new Date("2026-01-02T04:00:00.000Z");
    await segments.insert(
      { seq: 1, projectId: "prj", receivedAt, count: 2, work: { kind: "events", events } },
      receivedAt,
    );
    const stored = await database()
      .db.collection("event_segments")
      .findOne({ _id: sequenceId(1) as never });
    expect(stored?.work).toEqual({ kind: "events", packed: expect.any(String) });
    expect(await segments.find(1)).toEqual({
      seq: 1,
      projectId: "prj",
      receivedAt,
      count: 2,
      work: { kind: "events", events },
    });
  });

  it("a plan is one string, and read back exact, 64-bit counts included", async () => {
    const plans = new PlanStore(database().db, engineOf(database(), 0));
    expect(await plans.settle(7, plan)).toEqual({ plan, mine: true });
    const stored = await database()
      .db.collection("event_plans")
      .findOne({ _id: sequenceId(7) as never });
    expect(Object.keys(stored ?? {}).sort()).toEqual(["_id", "packed"]);
    const found = await plans.find(7);
    expect(found).toEqual(plan);
    expect((found!.cohorts[0].inc["days.2026-01-02.n0"] as Long).equals(countsChange(2 ** 22, 3))).toBe(true);
  });
});
