import roaring from "roaring";
import { Binary } from "mongodb";

// A CommonJS package whose exports Node's ESM loader cannot name: taken from its default export.
const { RoaringBitmap32 } = roaring;
type RoaringBitmap32 = InstanceType<typeof RoaringBitmap32>;

/**
 * Sets of player numbers are Roaring bitmaps (CRoaring's Node port, `roaring`: measured against its WebAssembly
 * port on this machine in docs/architecture.md, "Cohorts as sets"). Stored in the portable format, which the Java,
 * Go and C implementations read too.
 */
export { RoaringBitmap32 as Bitmap };

/** Numbers a stored chunk of a set covers: one Roaring container, so a chunk is at most 8 KiB a bitmap. */
export const CHUNK_BITS = 16;

/** The chunk a player number falls in. */
export const chunkOf = (number: number): number => number >>> CHUNK_BITS;

export function bitmapOf(binary: Binary | undefined): RoaringBitmap32 {
  return binary ? RoaringBitmap32.deserialize(binary.buffer, "portable") : new RoaringBitmap32();
}

export function binaryOf(bitmap: RoaringBitmap32): Binary {
  bitmap.runOptimize();
  return new Binary(bitmap.serialize("portable"));
}

/** `numbers` grouped by chunk, each group ascending. */
export function byChunk(numbers: Iterable<number>): Map<number, number[]> {
  const chunks = new Map<number, number[]>();
  for (const number of numbers) {
    const chunk = chunkOf(number);
    const list = chunks.get(chunk);
    if (list) list.push(number);
    else chunks.set(chunk, [number]);
  }
  for (const list of chunks.values()) list.sort((a, b) => a - b);
  return chunks;
}

/** One set made of its chunks (disjoint ranges): the chunk itself when there is one. */
export function joined(parts: readonly RoaringBitmap32[]): RoaringBitmap32 {
  if (parts.length === 1) return parts[0];
  return parts.length === 0 ? new RoaringBitmap32() : RoaringBitmap32.orMany(parts as RoaringBitmap32[]);
}

/** Bytes a bitmap holds in memory, near enough for a cache's budget. */
export const bytesOf = (bitmap: RoaringBitmap32): number => 64 + bitmap.getSerializationSizeInBytes("croaring");
