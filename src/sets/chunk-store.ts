import { setTimeout as delay } from "node:timers/promises";
import type { Collection, Db, Document, Filter } from "mongodb";
import { type Engine, throwIfRefused } from "../db/engine.js";
import { isDuplicateKeyCode } from "../db/errors.js";
import type { KeyedLock } from "../db/keyed-lock.js";
import { ContentionError } from "../errors.js";
import type { Cached, ChunkCache } from "./chunk-cache.js";

/** How a store's values are kept: decoded from a document (null: none yet), encoded back, measured and copied. */
export interface ChunkCodec<T> {
  decode(doc: Document | null): T;
  /** The fields a value is stored as, beside `_id`, `project_id` and the version `v`. */
  encode(value: T): Document;
  bytes(value: T): number;
  clone(value: T): T;
}

/** A change of one chunk, made on a copy of it: true when it changed something to write. */
export type ChunkChange<T> = (value: T) => boolean;

/** Rounds of an update whose writes lost to another instance's before it gives up. */
const MAX_ATTEMPTS = 20;
/** The wait before a round that lost runs again: full jitter, doubling up to 100 ms, so the other writer ends first. */
const lostBackoffMs = (attempt: number) => Math.random() * Math.min(100, 2 ** attempt);

interface ChunkDoc {
  _id: string;
  v: number;
}

/**
 * Documents written only whole, each with a version `v`, read through the instance's cache and changed by
 * read-modify-write: the chunks of the stored sets (bitmaps, columns). Where this instance is the only writer (the
 * embedded engine's owner) its cache is what the database holds; elsewhere a read checks the versions of what it
 * holds, and a write is guarded by the version it read, so another instance's write in between makes it run again.
 */
export class ChunkStore<T> {
  private readonly docs: Collection<ChunkDoc>;

  constructor(
    db: Db,
    private readonly name: string,
    private readonly options: { engine: Engine; cache: ChunkCache; codec: ChunkCodec<T>; locks: KeyedLock },
  ) {
    this.docs = db.collection<ChunkDoc>(name);
  }

  /** The chunks of `ids` as they are now (an empty value where there is no document). */
  async read(ids: readonly string[]): Promise<T[]> {
    return (await this.current(ids, false)).map((chunk) => chunk.value);
  }

  /**
   * The chunks of `ids`, all within the `_id` range `range`, read by that range in one command where the cache
   * cannot answer them (on MongoDB the range's versions, then the chunks whose version moved).
   */
  async readRange(ids: readonly string[], range: { $gte: string; $lt: string }): Promise<T[]> {
    const { cache, engine } = this.options;
    const held = ids.map((id) => cache.get<T>(this.key(id)));
    if (engine.soleWriter && held.every((entry) => entry !== undefined)) return held.map((entry) => entry!.value);
    if (engine.soleWriter) {
      const docs = await this.docs.find({ _id: range } as Filter<ChunkDoc>).toArray();
      const byId = new Map(docs.map((doc) => [doc._id, doc]));
      return ids.map((id) => this.cached(id, byId.get(id) ?? null).value);
    }
    const versions = await this.docs.find({ _id: range } as Filter<ChunkDoc>, { projection: { v: 1 } }).toArray();
    const stored = new Map(versions.map((doc) => [doc._id, doc.v]));
    const stale = new Set(ids.filter((id, i) => held[i]?.v !== (stored.get(id) ?? 0)));
    const docs = await engine.readByIds(
      this.docs,
      [...stale].filter((id) => stored.has(id)),
    );
    const read = new Map(docs.flatMap((doc) => (doc ? [[doc._id, doc] as const] : [])));
    return ids.map((id, i) => (stale.has(id) ? this.cached(id, read.get(id) ?? null, true).value : held[i]!.value));
  }

  /**
   * Applies each change to its chunk and writes the chunks it changed, all under this process's lock of each chunk;
   * a write that lost to another instance's reads that chunk again and applies its change again.
   */
  async update(projectId: string, changes: ReadonlyMap<string, ChunkChange<T>>): Promise<void> {
    const { engine, codec, cache, locks } = this.options;
    const ids = [...changes.keys()];
    await locks.run(
      ids.map((id) => `${this.name}/${id}`),
      async () => {
        let pending = ids;
        for (let attempt = 0; pending.length > 0; attempt++) {
          if (attempt === MAX_ATTEMPTS) throw new ContentionError(`${this.name}: too many concurrent writers; retry`);
          if (attempt > 0) await delay(lostBackoffMs(attempt));
          const current = await this.current(pending, attempt > 0);
          const writes = pending.flatMap((id, i) => {
            const value = codec.clone(current[i].value);
            return changes.get(id)!(value) ? [{ id, value, v: current[i].v }] : [];
          });
          const operations = writes.map(({ id, value, v }) => ({
            replaceOne: {
              filter: (engine.isolatesUpdates ? { _id: id, v } : { _id: id }) as Filter<ChunkDoc>,
              replacement: { project_id: projectId, ...codec.encode(value), v: v + 1 },
              upsert: true,
            },
          }));
          let lost: Set<number>;
          try {
            const failures = await engine.writeAll(this.docs, operations);
            throwIfRefused(
              this.name,
              failures.filter((failure) => !isDuplicateKeyCode(failure.code)),
            );
            lost = new Set(failures.map((failure) => failure.index));
          } catch (error) {
            for (const { id } of writes) cache.delete(this.key(id));
            throw error;
          }
          writes.forEach(({ id, value, v }, i) => {
            if (lost.has(i)) cache.delete(this.key(id));
            else cache.set(this.key(id), { value, v: v + 1, bytes: codec.bytes(value) });
          });
          pending = writes.filter((_, i) => lost.has(i)).map(({ id }) => id);
        }
      },
    );
  }

  /**
   * Chunks the caller knows have no document yet (their index says so): where this instance is the only writer, its
   * cache holds them as empty, and their first write reads nothing.
   */
  assumeAbsent(ids: readonly string[]): void {
    const { cache, codec, engine } = this.options;
    if (!engine.soleWriter) return;
    for (const id of ids) {
      if (cache.get(this.key(id))) continue;
      const value = codec.decode(null);
      cache.set(this.key(id), { value, v: 0, bytes: codec.bytes(value) });
    }
  }

  /** Deletes the documents of `ids` (and forgets them). */
  async delete(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.options.cache.delete(this.key(id));
    if (ids.length > 0) await this.docs.deleteMany({ _id: { $in: [...ids] } } as Filter<ChunkDoc>);
  }

  /**
   * The chunks of `ids`: what the cache holds where it is all there is (the sole writer) or where its version is the
   * stored one, the rest read. `fresh`: every one read (a write lost to another instance's).
   */
  private async current(ids: readonly string[], fresh: boolean): Promise<Cached<T>[]> {
    const { cache, engine } = this.options;
    const found = ids.map((id) => (fresh ? undefined : cache.get<T>(this.key(id))));
    if (!engine.soleWriter) {
      const held = ids.filter((_, i) => found[i] !== undefined);
      const versions = await this.versions(held);
      ids.forEach((id, i) => {
        if (found[i] && found[i]!.v !== (versions.get(id) ?? 0)) found[i] = undefined;
      });
    }
    const missing = ids.filter((_, i) => found[i] === undefined);
    const docs = missing.length === 0 ? [] : await engine.readByIds(this.docs, missing);
    const read = new Map(missing.map((id, i) => [id, this.cached(id, docs[i], !engine.soleWriter)]));
    return ids.map((id, i) => found[i] ?? read.get(id)!);
  }

  private async versions(ids: readonly string[]): Promise<Map<string, number>> {
    if (ids.length === 0) return new Map();
    const docs = await this.docs
      .find({ _id: { $in: [...ids] } } as Filter<ChunkDoc>, { projection: { v: 1 } })
      .toArray();
    return new Map(docs.map((doc) => [doc._id, doc.v]));
  }

  /**
   * What a read found, kept unless the cache holds a version as new (a write of this instance landed while the read
   * was on its way: the document read is older than what was written); `replace`: kept whatever the cache holds (the
   * read found it stale: another instance wrote, or deleted, the chunk).
   */
  private cached(id: string, doc: ChunkDoc | null, replace = false): Cached<T> {
    const { codec, cache } = this.options;
    const held = cache.get<T>(this.key(id));
    if (!replace && held && held.v >= (doc?.v ?? 0)) return held;
    const value = codec.decode(doc);
    const entry = { value, v: doc?.v ?? 0, bytes: codec.bytes(value) };
    cache.set(this.key(id), entry);
    return entry;
  }

  private key(id: string): string {
    return `${this.name}/${id}`;
  }
}
