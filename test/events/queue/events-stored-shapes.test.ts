import { Binary } from "mongodb";
import { describe, expect, it } from "vitest";
import { engineOf } from "../../../src/db/engine.js";
import { activityCodec } from "../../../src/events/activity/activity-chunk.js";
import { ActivityStore, monthsCodec } from "../../../src/events/activity/activity-store.js";
import type { QueuedEvent } from "../../../src/events/queue/entries.js";
import { SegmentStore } from "../../../src/events/queue/segment-store.js";
import { createSets } from "../../../src/sets/capability.js";
import { scratchDatabase } from "../../support/db/scratch-database.js";

const database = scratchDatabase("stored_shapes");

const events: QueuedEvent[] = [
  { n: "level_up", u: "alice", d: null, t: new Date("2026-01-02T03:04:05.678Z"), i: "e1", p: '{"level":3}' },
  { n: 'match "end"', u: null, d: "dev-1", t: new Date("2025-12-31T23:59:59.999Z"), i: null, p: null },
];

describe("queue segments and activity as stored", () => {
  it("a segment's events are one string, and read back as they were written", async () => {
    const segments = new SegmentStore(database().db);
    const receivedAt = new Date("2026-01-02T04:00:00.000Z");
    const segment = { seq: 1, projectId: "prj", receivedAt, count: 2, work: { kind: "events" as const, events } };
    expect(await segments.insert(segment)).toBe(true);
    const stored = await database()
      .db.collection("event_segments")
      .findOne({ _id: "prj/0000000000000001" as never });
    expect(stored?.work).toEqual({ kind: "events", packed: expect.any(String) });
    expect(await segments.find("prj", 1)).toEqual(segment);
  });

  it("a day's activity is a binary set of players beside bit-sliced counts, and its month's index one string", async () => {
    const sets = createSets({ database: database(), engine: engineOf(database()), cacheBytes: 0 });
    const activity = new ActivityStore(
      sets.chunks("event_activity", activityCodec),
      sets.chunks("event_activity_days", monthsCodec),
      sets.numbers,
    );
    const numbers = await sets.numbers.assign("prj", ["u:alice", "u:bob"]);
    const players = [
      { number: numbers.get("u:alice")!, events: 1, sums: new Map() },
      { number: numbers.get("u:bob")!, events: 6, sums: new Map([["1", 2_500_000]]) },
    ];
    await activity.count("prj", [{ seq: 1, days: new Map([["2026-01-02", new Map([["tap", players]])]]) }]);
    const chunks = database().db.collection("event_activity");
    const own = await chunks.findOne({ _id: "prj/2026-01-02/tap/0" as never });
    // Bob's 6 events kept as 5 (every player has one at least): 101, three slices.
    expect(own).toMatchObject({
      players: expect.any(Binary),
      counts: [expect.any(Binary), expect.any(Binary), expect.any(Binary)],
    });
    const sum = await chunks.findOne({ _id: "prj/2026-01-02/tap/1/0" as never });
    expect(sum?.sums).toEqual({ "1": { p: expect.any(Array), n: [] } });
    const month = await database()
      .db.collection("event_activity_days")
      .findOne({ _id: "prj/2026-01" as never });
    expect(JSON.parse(month?.days)).toEqual({ "2026-01-02": ["tap", "tap/1"] });
    const read = await activity.read("prj", ["2026-01-02"]);
    const tap = read.get("2026-01-02")!.get("tap")![0];
    expect(tap.players.toArray()).toEqual([...numbers.values()].sort((a, b) => a - b));
  });
});
