import type { Binary, Document } from "mongodb";
import { Bitmap, binaryOf, bitmapOf, bytesOf } from "../../sets/bitmap.js";
import { setValue, valueOf, type Slices } from "../../sets/bsi.js";

/** A summed property's totals beside a day's players, in millionths: positive and negative totals apart. */
export interface SumSlices {
  pos: Slices;
  neg: Slices;
}

/**
 * The activity of one event name on one day, for the players of one chunk of numbers: who had an event, and beside
 * them, bit-sliced (sets/bsi.ts), each one's events that day less one (most have one: their slices stay empty) and
 * each summed property's total. `hw`: the last events segment it counts, and `moved`: the last fold or erasure it
 * took in (queue sequence numbers), so each is counted once.
 */
export interface ActivityChunk {
  players: Bitmap;
  counts: Slices;
  sums: Map<string, SumSlices>;
  hw: number;
  moved: number;
}

/** What one player adds to a chunk: events, and millionths per summed property id. */
export interface PlayerActivity {
  number: number;
  events: number;
  sums: ReadonlyMap<string, number>;
}

const newSlice = () => new Bitmap();
const slicesOf = (binaries: Binary[] | undefined): Slices => (binaries ?? []).map(bitmapOf);

export const activityCodec = {
  decode(doc: Document | null): ActivityChunk {
    const sums = Object.entries((doc?.sums ?? {}) as Record<string, { p?: Binary[]; n?: Binary[] }>);
    return {
      players: bitmapOf(doc?.players),
      counts: slicesOf(doc?.counts),
      sums: new Map(sums.map(([id, { p, n }]) => [id, { pos: slicesOf(p), neg: slicesOf(n) }])),
      hw: doc?.hw ?? 0,
      moved: doc?.moved ?? 0,
    };
  },
  encode: (chunk: ActivityChunk): Document => ({
    players: binaryOf(chunk.players),
    counts: chunk.counts.map(binaryOf),
    sums: Object.fromEntries(
      [...chunk.sums].map(([id, { pos, neg }]) => [id, { p: pos.map(binaryOf), n: neg.map(binaryOf) }]),
    ),
    hw: chunk.hw,
    moved: chunk.moved,
  }),
  bytes: (chunk: ActivityChunk): number =>
    bitmapsOf(chunk).reduce((sum, bitmap) => sum + bytesOf(bitmap), 64 * (1 + chunk.sums.size)),
  clone: (chunk: ActivityChunk): ActivityChunk => ({
    players: chunk.players.clone(),
    counts: chunk.counts.map((slice) => slice.clone()),
    sums: new Map(
      [...chunk.sums].map(([id, { pos, neg }]) => [
        id,
        { pos: pos.map((slice) => slice.clone()), neg: neg.map((slice) => slice.clone()) },
      ]),
    ),
    hw: chunk.hw,
    moved: chunk.moved,
  }),
};

function bitmapsOf(chunk: ActivityChunk): Bitmap[] {
  return [chunk.players, ...chunk.counts, ...[...chunk.sums.values()].flatMap(({ pos, neg }) => [...pos, ...neg])];
}

/** Adds a player's events and sums to the chunk. */
export function addActivity(chunk: ActivityChunk, { number, events, sums }: PlayerActivity): void {
  const had = chunk.players.has(number);
  if (events > 0) {
    chunk.players.add(number);
    setValue(chunk.counts, number, (had ? valueOf(chunk.counts, number) + 1 : 0) + events - 1, newSlice);
  }
  for (const [id, millionths] of sums) addSum(chunk, id, number, millionths);
}

/** A player's activity in the chunk (null: none), taken out of it. */
export function takeActivity(chunk: ActivityChunk, number: number): PlayerActivity | null {
  const events = chunk.players.has(number) ? valueOf(chunk.counts, number) + 1 : 0;
  const sums = new Map<string, number>();
  for (const [id, { pos, neg }] of chunk.sums) {
    const total = valueOf(pos, number) - valueOf(neg, number);
    if (total !== 0) sums.set(id, total);
    setValue(pos, number, 0, newSlice);
    setValue(neg, number, 0, newSlice);
  }
  chunk.players.remove(number);
  setValue(chunk.counts, number, 0, newSlice);
  return events === 0 && sums.size === 0 ? null : { number, events, sums };
}

function addSum(chunk: ActivityChunk, id: string, number: number, millionths: number): void {
  let slices = chunk.sums.get(id);
  if (!slices) chunk.sums.set(id, (slices = { pos: [], neg: [] }));
  const total = valueOf(slices.pos, number) - valueOf(slices.neg, number) + millionths;
  setValue(slices.pos, number, Math.max(total, 0), newSlice);
  setValue(slices.neg, number, Math.max(-total, 0), newSlice);
  if (slices.pos.length === 0 && slices.neg.length === 0) chunk.sums.delete(id);
}
