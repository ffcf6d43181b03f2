import type { Clock } from "../clock.js";
import type { ApiKeyRecord, ApiKeyStore } from "./api-key-store.js";

export interface ApiKeyCacheOptions {
  store: ApiKeyStore;
  /** How long a lookup's answer, found or not, is reused; 0 reads the key every time. */
  ttlMs: number;
  clock: Clock;
  /** Unknown key hashes kept at most; the oldest is dropped first. */
  maxUnknownKeys?: number;
}

interface Entry {
  record: ApiKeyRecord;
  expiresAt: number;
}

/**
 * API key records by hash, kept for `ttlMs` so that most requests skip the
 * lookup, and concurrent lookups of one hash share one read. A key revoked
 * through this process is dropped at once; another instance refuses it
 * within `ttlMs`.
 *
 * Hashes of unknown keys are kept too, for the same time and bounded in
 * number, so a key presented again and again (an old key left in a client)
 * costs one lookup per ttl. Keys are random, so a key created after its hash
 * was found unknown is never one that someone was already presenting.
 */
export class ApiKeyCache {
  // The record last read for each stored key, kept past its ttl (see lastRead); there are only
  // as many as keys in the database.
  private readonly known = new Map<string, Entry>();
  // Insertion order is expiry order (one ttl for all), so expired entries are always at the front.
  private readonly unknown = new Map<string, number>();
  private readonly reads = new Map<string, Promise<ApiKeyRecord | null>>();
  /** Bumped by each revocation, so a lookup that raced one does not cache what it read before it. */
  private revocations = 0;

  constructor(private readonly options: ApiKeyCacheOptions) {}

  /** The record last read for `hash`, even past its ttl: whether the key was good, without a lookup. */
  lastRead(hash: Buffer): ApiKeyRecord | undefined {
    return this.known.get(hash.toString("hex"))?.record;
  }

  /**
   * The record for `hash`: cached while fresh, else read. `beforeRead` runs
   * (and may throw to refuse) only when this call is the one to start a read.
   */
  async findByHash(hash: Buffer, beforeRead?: () => void): Promise<ApiKeyRecord | null> {
    const id = hash.toString("hex");
    const now = this.now();
    const cached = this.known.get(id);
    if (cached && cached.expiresAt > now) return cached.record;
    if ((this.unknown.get(id) ?? 0) > now) return null;
    const inFlight = this.reads.get(id);
    if (inFlight) return inFlight;

    beforeRead?.();
    const read = this.read(hash, id, now).finally(() => {
      if (this.reads.get(id) === read) this.reads.delete(id);
    });
    this.reads.set(id, read);
    return read;
  }

  /** Drops the key with this id, after a revocation. */
  forget(keyId: string): void {
    this.revocations++;
    // A read in flight may have started before the revocation; later callers start their own.
    this.reads.clear();
    for (const [id, entry] of this.known) {
      if (entry.record.keyId === keyId) this.known.delete(id);
    }
  }

  private async read(hash: Buffer, id: string, now: number): Promise<ApiKeyRecord | null> {
    const { store, ttlMs, maxUnknownKeys = 10_000 } = this.options;
    const revocations = this.revocations;
    const record = await store.findApiKeyByHash(hash);
    this.known.delete(id);
    this.unknown.delete(id);
    if (record && revocations === this.revocations) {
      this.known.set(id, { record, expiresAt: now + ttlMs });
    } else if (!record && ttlMs > 0) {
      this.unknown.set(id, now + ttlMs);
      if (this.unknown.size > maxUnknownKeys) this.unknown.delete(this.unknown.keys().next().value!);
    }
    for (const [unknownId, expiresAt] of this.unknown) {
      if (expiresAt > now) break;
      this.unknown.delete(unknownId);
    }
    return record;
  }

  private now(): number {
    return this.options.clock.now().getTime();
  }
}
