import { BSON } from "mongodb";
import { describe, expect, it } from "vitest";
import { Bitmap } from "../../sets/bitmap.js";
import { activityCodec, addActivity, takeActivity, type ActivityChunk } from "./activity-chunk.js";

const empty = (): ActivityChunk => activityCodec.decode(null);
const stored = (chunk: ActivityChunk) =>
  activityCodec.decode(BSON.deserialize(BSON.serialize(activityCodec.encode(chunk))));

describe("a chunk of a day's activity", () => {
  it("counts each player's events and sums, and gives them back whole when taken out", () => {
    const chunk = empty();
    addActivity(chunk, { number: 7, events: 3, sums: new Map([["1", 2_500_000]]) });
    addActivity(chunk, { number: 7, events: 2, sums: new Map([["1", -4_000_000]]) });
    addActivity(chunk, { number: 9, events: 1, sums: new Map() });
    const read = stored(chunk);
    expect(read.players.toArray()).toEqual([7, 9]);
    expect(takeActivity(read, 7)).toEqual({ number: 7, events: 5, sums: new Map([["1", -1_500_000]]) });
    expect(takeActivity(read, 7)).toBeNull();
    expect(takeActivity(read, 9)).toEqual({ number: 9, events: 1, sums: new Map() });
    expect(read.players.isEmpty).toBe(true);
    expect(read.counts).toEqual([]);
  });

  it("keeps a sum back-filled without events (its own series) until it is taken", () => {
    const chunk = empty();
    addActivity(chunk, { number: 3, events: 0, sums: new Map([["2", 7]]) });
    expect(chunk.players.isEmpty).toBe(true);
    expect(takeActivity(stored(chunk), 3)).toEqual({ number: 3, events: 0, sums: new Map([["2", 7]]) });
  });

  it("stays under 16 MiB at its worst: every slice a full bitmap container, 2^31 events, a sum's 53 bits each way", () => {
    // Every other number of the chunk: no run compresses it, each slice is a whole 8 KiB bitmap container.
    const all = new Bitmap(Array.from({ length: 2 ** 15 }, (_, i) => 2 * i));
    const slices = (n: number) => Array.from({ length: n }, () => all.clone());
    const events: ActivityChunk = { players: all, counts: slices(31), sums: new Map(), hw: 1, moved: 1 };
    const sum: ActivityChunk = { ...events, counts: [], sums: new Map([["20", { pos: slices(53), neg: slices(53) }]]) };
    for (const chunk of [events, sum]) {
      expect(BSON.calculateObjectSize(activityCodec.encode(chunk))).toBeLessThan(16 * 2 ** 20);
    }
  });
});
