import { performance } from "node:perf_hooks";
import roaring from "roaring";
import { RoaringBitmap32 as WasmBitmap, roaringLibraryInitialize } from "roaring-wasm";
import { round } from "./parts/support.js";

/**
 * `npm run bench -- bitmaps`: the two Roaring ports on this machine, CRoaring's native Node port (`roaring`, what
 * src/sets/bitmap.ts uses) against its WebAssembly port (`roaring-wasm`), in one run, on one stored chunk's worth of
 * player numbers (65,536) at 1 %, 10 % and 50 % density: andCardinality of two sets (a tag within a day), or of 30
 * (a month of days: mau), and of 10 (a filter of tags `all`, pairwise as src/players/cohorts/cohort-sets.ts
 * intersects), and a set serialised and deserialised in the portable format (what chunk documents store). Every answer is checked equal across the ports before any timing.
 */
const CHUNK = 65_536;
const DENSITIES = [0.01, 0.1, 0.5];
const OR_SETS = 30;
const AND_SETS = 10;
const BATCH_MS = Number(process.env.BENCH_BITMAPS_BATCH_MS ?? 100);
const BATCHES = 7;

const { RoaringBitmap32: NativeBitmap } = roaring;

/** What the bench asks of a port: each operation run once, its result disposed where the port needs it. */
interface Port {
  andCardinality(a: number, b: number): number;
  orMany(): number;
  andMany(): number;
  serialize(): number;
  deserialize(): number;
  dispose(): void;
}

/** A well-mixed 32-bit hash of `value` (lowbias32), as a fraction of 2^32. */
function hashed(value: number): number {
  let h = Math.imul(value ^ (value >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return ((h ^ (h >>> 16)) >>> 0) / 4_294_967_296;
}

/** `count` sets of a chunk's numbers, each number in a set with probability `density`, the same in every run. */
function sets(density: number, count: number): Uint32Array[] {
  return Array.from({ length: count }, (_, set) => {
    const members: number[] = [];
    for (let n = 0; n < CHUNK; n++) if (hashed(n + set * CHUNK) < density) members.push(n);
    return Uint32Array.from(members);
  });
}

/** Bitmaps run-optimised, as src/sets/bitmap.ts stores them. */
function optimised<B extends { runOptimize(): unknown }>(bitmaps: B[]): B[] {
  for (const bitmap of bitmaps) bitmap.runOptimize();
  return bitmaps;
}

function nativePort(numbers: Uint32Array[]): Port {
  const bitmaps = optimised(numbers.map((list) => new NativeBitmap(list)));
  const stored = bitmaps[0].serialize("portable");
  return {
    andCardinality: (a, b) => bitmaps[a].andCardinality(bitmaps[b]),
    orMany: () => NativeBitmap.orMany(bitmaps.slice(0, OR_SETS)).size,
    andMany: () => bitmaps.slice(1, AND_SETS).reduce((all, next) => NativeBitmap.and(all, next), bitmaps[0]).size,
    serialize: () => bitmaps[0].serialize("portable").length,
    deserialize: () => NativeBitmap.deserialize(stored, "portable").size,
    dispose: () => {},
  };
}

function wasmPort(numbers: Uint32Array[]): Port {
  const bitmaps = optimised(numbers.map((list) => new WasmBitmap(list)));
  const stored = bitmaps[0].serialize("portable");
  // Its bitmaps live in WebAssembly memory, freed only by dispose(): each intermediate result is disposed at once.
  const sizeOf = (bitmap: WasmBitmap): number => {
    const size = bitmap.size;
    bitmap.dispose();
    return size;
  };
  return {
    andCardinality: (a, b) => bitmaps[a].andCardinality(bitmaps[b]),
    orMany: () => sizeOf(WasmBitmap.orMany(bitmaps.slice(0, OR_SETS))),
    andMany: () => {
      let all = WasmBitmap.and(bitmaps[0], bitmaps[1]);
      for (const next of bitmaps.slice(2, AND_SETS)) {
        const both = WasmBitmap.and(all, next);
        all.dispose();
        all = both;
      }
      return sizeOf(all);
    },
    serialize: () => bitmaps[0].serialize("portable").length,
    deserialize: () => sizeOf(WasmBitmap.deserialize(stored, "portable")),
    dispose: () => bitmaps.forEach((bitmap) => bitmap.dispose()),
  };
}

const OPERATIONS: Record<string, (port: Port) => number> = {
  and_cardinality: (port) => port.andCardinality(0, 1),
  [`or_many_${OR_SETS}`]: (port) => port.orMany(),
  [`and_of_${AND_SETS}`]: (port) => port.andMany(),
  serialize_portable: (port) => port.serialize(),
  deserialize_portable: (port) => port.deserialize(),
};

/** Microseconds an operation takes: the median of BATCHES batches of about BATCH_MS each, after a warm-up batch. */
function microseconds(operation: () => number): number {
  let repeats = 1;
  while (true) {
    const started = performance.now();
    for (let k = 0; k < repeats; k++) operation();
    if (performance.now() - started >= BATCH_MS / 4) break;
    repeats *= 2;
  }
  repeats *= 4;
  const perRun: number[] = [];
  for (let batch = 0; batch <= BATCHES; batch++) {
    const started = performance.now();
    for (let k = 0; k < repeats; k++) operation();
    if (batch > 0) perRun.push(((performance.now() - started) * 1000) / repeats);
  }
  perRun.sort((a, b) => a - b);
  return perRun[Math.floor(perRun.length / 2)];
}

export default async function bitmapsBench() {
  await roaringLibraryInitialize();
  const byDensity: Record<string, object> = {};
  for (const density of DENSITIES) {
    const numbers = sets(density, Math.max(OR_SETS, AND_SETS));
    const native = nativePort(numbers);
    const wasm = wasmPort(numbers);
    const rows: Record<string, object> = {};
    for (const [name, operation] of Object.entries(OPERATIONS)) {
      const expected = operation(native);
      if (operation(wasm) !== expected) throw new Error(`${name} at ${density}: the ports disagree`);
      const nativeUs = microseconds(() => operation(native));
      const wasmUs = microseconds(() => operation(wasm));
      rows[name] = {
        native_us: round(nativeUs, 2),
        wasm_us: round(wasmUs, 2),
        wasm_over_native: round(wasmUs / nativeUs, 2),
      };
    }
    wasm.dispose();
    byDensity[`${density * 100}%`] = {
      members: numbers[0].length,
      portable_bytes: native.serialize(),
      ...rows,
    };
    process.stderr.write(`bitmaps bench: ${density * 100}% done\n`);
  }
  return { chunk_numbers: CHUNK, by_density: byDensity };
}
