import type { Database } from "../db/database.js";
import type { Engine } from "../db/engine.js";
import { unavailableOf } from "../db/errors.js";
import { KeyedLock } from "../db/keyed-lock.js";
import type { Bitmap } from "./bitmap.js";
import { binaryOf, bitmapOf, bytesOf } from "./bitmap.js";
import { ChunkCache } from "./chunk-cache.js";
import { ChunkStore, type ChunkCodec } from "./chunk-store.js";
import { PlayerNumbers } from "./player-numbers.js";

/** What every store of sets shares: how it reads and writes, the instance's cache, and the players' numbers. */
export interface Sets {
  numbers: PlayerNumbers;
  /** A store of chunks in collection `name`, kept as `codec` says. */
  chunks<T>(name: string, codec: ChunkCodec<T>): ChunkStore<T>;
  cache: ChunkCache;
}

/** A set's chunk as stored: its bitmap, and its size (a count a listing reads without the bitmap). */
export const bitmapCodec: ChunkCodec<Bitmap> = {
  decode: (doc) => bitmapOf(doc?.b),
  encode: (bitmap) => ({ b: binaryOf(bitmap), n: bitmap.size }),
  bytes: bytesOf,
  clone: (bitmap) => bitmap.clone(),
};

/** `cacheBytes`: CACHE_MB, what the instance keeps of what it read and wrote. */
export function createSets({
  database,
  engine,
  cacheBytes,
}: {
  database: Database;
  engine: Engine;
  cacheBytes: number;
}): Sets {
  const cache = new ChunkCache(cacheBytes);
  // A chunk written in a round that found the database unavailable fails the calls then queued on it at once.
  const locks = new KeyedLock(unavailableOf);
  return {
    cache,
    numbers: new PlayerNumbers(database.db, { engine, cache, locks }),
    chunks: <T>(name: string, codec: ChunkCodec<T>) =>
      new ChunkStore<T>(database.db, name, { engine, cache, codec, locks }),
  };
}
