import type { Collection, Db, Filter } from "mongodb";
import { type Engine, throwIfRefused } from "../db/engine.js";
import { isDuplicateKeyCode } from "../db/errors.js";
import { projectScopedId } from "../db/ids.js";
import type { KeyedLock } from "../db/keyed-lock.js";
import type { ChunkCache } from "./chunk-cache.js";
import { ChunkStore } from "./chunk-store.js";

/** Identity keys a stored chunk of the numbers' keys holds: at 256 characters a key, about 1 MB a chunk. */
export const KEY_CHUNK_BITS = 12;
const KEY_CHUNK = 1 << KEY_CHUNK_BITS;
/** What the cache holds for a key whose number an erasure took: none, as far as this instance knows. */
const RETIRED = -1;
/** Bytes a remembered number counts against the cache's budget (the key and the map's own). */
const NUMBER_BYTES = 120;

interface NumberDoc {
  _id: string;
  project_id: string;
  n: number;
}

interface CounterDoc {
  _id: string;
  /** The next number to hand out: every number below it was reserved. */
  next: number;
}

/** The keys of a chunk of numbers, by number within the chunk (null: not handed out, or its writer lost it). */
export type KeyChunk = (string | null)[];

/** A chunk of keys as stored: one JSON string (FerretDB decodes a document field by field). */
export const keyChunkCodec = {
  decode: (doc: { keys?: string } | null): KeyChunk => (doc?.keys ? (JSON.parse(doc.keys) as KeyChunk) : []),
  encode: (keys: KeyChunk) => ({ keys: JSON.stringify(keys) }),
  bytes: (keys: KeyChunk) => 64 + keys.reduce((sum, key) => sum + 16 + (key?.length ?? 0) * 2, 0),
  clone: (keys: KeyChunk): KeyChunk => [...keys],
};

/**
 * The dense number of each player of a project, handed out the first time the project sees them (a profile written
 * or an event applied) and kept: every set of players is a set of these numbers. An identity key's number is in
 * `player_numbers` (`<project>/<identity_key>` → `n`); the keys of the numbers in chunks of `player_number_keys`,
 * which search and export read to order a set's players by identity key. A key folded into another player's points
 * at that player's number; an erased one has none (its next event makes a new player).
 */
export class PlayerNumbers {
  private readonly numbers: Collection<NumberDoc>;
  private readonly counters: Collection<CounterDoc>;
  private readonly keys: ChunkStore<KeyChunk>;

  constructor(
    db: Db,
    private readonly options: { engine: Engine; cache: ChunkCache; locks: KeyedLock },
  ) {
    this.numbers = db.collection<NumberDoc>("player_numbers");
    this.counters = db.collection<CounterDoc>("player_number_counters");
    this.keys = new ChunkStore(db, "player_number_keys", { ...options, codec: keyChunkCodec });
  }

  /** How many numbers the project has handed out (every number below is taken or lost). */
  async count(projectId: string): Promise<number> {
    const { cache, engine } = this.options;
    const held = engine.soleWriter ? cache.get<number>(this.countKey(projectId)) : undefined;
    if (held) return held.value;
    const next = (await this.counters.findOne({ _id: projectId }))?.next ?? 0;
    // A reservation that landed while the read was on its way knows a higher count.
    const now = Math.max(next, cache.get<number>(this.countKey(projectId))?.value ?? 0);
    if (engine.soleWriter) cache.set(this.countKey(projectId), this.entry(now));
    return now;
  }

  /** The number of each of `identityKeys` that has one. */
  async find(projectId: string, identityKeys: readonly string[]): Promise<Map<string, number>> {
    const { cache, engine } = this.options;
    const found = new Map<string, number>();
    const unknown: string[] = [];
    for (const key of new Set(identityKeys)) {
      // Only the sole writer knows that no other instance moved a key (a fold) or took its number (an erasure).
      const held = engine.soleWriter ? cache.get<number>(this.cacheKey(projectId, key)) : undefined;
      if (held && held.value !== RETIRED) found.set(key, held.value);
      else unknown.push(key);
    }
    const docs = await engine.readByIds(
      this.numbers,
      unknown.map((key) => projectScopedId(projectId, key)),
    );
    unknown.forEach((key, i) => {
      const doc = docs[i];
      if (!doc) return;
      found.set(key, doc.n);
      // A fold or an erasure in this process while the read was on its way knows better: what it left is kept.
      if (!cache.get(this.cacheKey(projectId, key))) this.remember(projectId, key, doc.n, found);
    });
    return found;
  }

  /** The number of each of `identityKeys`, handing out new ones to those without. */
  async assign(projectId: string, identityKeys: readonly string[]): Promise<Map<string, number>> {
    const found = await this.find(projectId, identityKeys);
    const missing = [...new Set(identityKeys)].filter((key) => !found.has(key));
    if (missing.length === 0) return found;
    const first = await this.reserve(projectId, missing.length);
    // The keys first: a number written to a set always has its key (a number whose key lost below is in no set).
    await this.writeKeys(projectId, missing, first);
    const operations = missing.map((key, i) => ({
      insertOne: { document: { _id: projectScopedId(projectId, key), project_id: projectId, n: first + i } },
    }));
    const failures = await this.options.engine.writeAll(this.numbers, operations);
    throwIfRefused(
      "player numbers",
      failures.filter((failure) => !isDuplicateKeyCode(failure.code)),
    );
    const lost = new Set(failures.map((failure) => missing[failure.index]));
    missing.forEach((key, i) => !lost.has(key) && this.remember(projectId, key, first + i, found));
    // Another writer numbered these first: theirs is the number.
    for (const [key, number] of await this.find(projectId, [...lost])) found.set(key, number);
    return found;
  }

  /** Points `identityKeys` at `number` (a fold: the device's later events are the player's). */
  async point(projectId: string, identityKeys: readonly string[], number: number): Promise<void> {
    const operations = identityKeys.map((key) => ({
      replaceOne: {
        filter: { _id: projectScopedId(projectId, key) } as Filter<NumberDoc>,
        replacement: { project_id: projectId, n: number },
        upsert: true,
      },
    }));
    throwIfRefused("player numbers", await this.options.engine.writeAll(this.numbers, operations));
    for (const key of identityKeys) this.remember(projectId, key, number, new Map());
  }

  /** Takes their numbers from `identityKeys` (an erasure): their next events make new players. */
  async retire(projectId: string, identityKeys: readonly string[]): Promise<void> {
    for (const key of identityKeys) this.options.cache.set(this.cacheKey(projectId, key), this.entry(RETIRED));
    const ids = identityKeys.map((key) => projectScopedId(projectId, key));
    if (ids.length > 0) await this.numbers.deleteMany({ _id: { $in: ids } } as Filter<NumberDoc>);
  }

  /** The identity key of each of `numbers` (those handed out). */
  async keysOf(projectId: string, numbers: readonly number[]): Promise<Map<number, string>> {
    const chunks = [...new Set(numbers.map((number) => number >>> KEY_CHUNK_BITS))];
    const read = await this.keys.read(chunks.map((chunk) => this.keyChunkId(projectId, chunk)));
    const byChunk = new Map(chunks.map((chunk, i) => [chunk, read[i]]));
    const keys = new Map<number, string>();
    for (const number of numbers) {
      const key = byChunk.get(number >>> KEY_CHUNK_BITS)?.[number & (KEY_CHUNK - 1)];
      if (key) keys.set(number, key);
    }
    return keys;
  }

  /** The keys of every number from `from` below `to`, a chunk at a time (an order of the project's keys). */
  async *keysBetween(projectId: string, from: number, to: number): AsyncGenerator<[number, string]> {
    for (let chunk = from >>> KEY_CHUNK_BITS; chunk << KEY_CHUNK_BITS < to; chunk++) {
      const [keys] = await this.keys.read([this.keyChunkId(projectId, chunk)]);
      const base = chunk << KEY_CHUNK_BITS;
      for (let i = Math.max(from - base, 0); i < keys.length && base + i < to; i++) {
        if (keys[i]) yield [base + i, keys[i]!];
      }
    }
  }

  /** `count` new numbers in a row: the first of them. One at a time in this process (FerretDB loses concurrent `$inc`s). */
  private async reserve(projectId: string, count: number): Promise<number> {
    const doc = await this.options.locks.run([`numbers/${projectId}`], () =>
      this.counters.findOneAndUpdate(
        { _id: projectId },
        { $inc: { next: count } },
        { upsert: true, returnDocument: "after" },
      ),
    );
    if (this.options.engine.soleWriter) this.options.cache.set(this.countKey(projectId), this.entry(doc!.next));
    return doc!.next - count;
  }

  private async writeKeys(projectId: string, keys: readonly string[], first: number): Promise<void> {
    const changes = new Map<string, (chunk: KeyChunk) => boolean>();
    keys.forEach((key, i) => {
      const number = first + i;
      const id = this.keyChunkId(projectId, number >>> KEY_CHUNK_BITS);
      const earlier = changes.get(id);
      changes.set(id, (chunk) => {
        earlier?.(chunk);
        while (chunk.length < (number & (KEY_CHUNK - 1))) chunk.push(null);
        chunk[number & (KEY_CHUNK - 1)] = key;
        return true;
      });
    });
    await this.keys.update(projectId, changes);
  }

  private remember(projectId: string, key: string, number: number, into: Map<string, number>): void {
    into.set(key, number);
    if (this.options.engine.soleWriter) this.options.cache.set(this.cacheKey(projectId, key), this.entry(number));
  }

  private entry(value: number) {
    return { value, v: 0, bytes: NUMBER_BYTES };
  }

  private countKey(projectId: string): string {
    return `player_number_counters/${projectId}`;
  }

  private cacheKey(projectId: string, key: string): string {
    return `player_numbers/${projectId}/${key}`;
  }

  private keyChunkId(projectId: string, chunk: number): string {
    return projectScopedId(projectId, String(chunk));
  }
}
