import type { Clock } from "../clock.js";
import type { AdminStore, ApiKeyRecord } from "./store.js";

export interface ApiKeyCacheOptions {
  store: AdminStore;
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
 * lookup. A key revoked through this process is dropped at once; another
 * instance refuses it within `ttlMs`.
 *
 * Hashes of unknown keys are kept too, for the same time and bounded in
 * number, so a key presented again and again (an old key left in a client)
 * costs one lookup per ttl. Keys are random, so a key created after its hash
 * was found unknown is never one that someone was already presenting.
 */
export class ApiKeyCache {
  // Insertion order is expiry order (one ttl for all), so expired entries are always at the front.
  private readonly known = new Map<string, Entry>();
  private readonly unknown = new Map<string, number>();
  /** Bumped by each revocation, so a lookup that raced one does not cache what it read before it. */
  private revocations = 0;

  constructor(private readonly options: ApiKeyCacheOptions) {}

  /** The record for `hash` if the cache holds it: no lookup. */
  peek(hash: Buffer): ApiKeyRecord | undefined {
    const cached = this.known.get(hash.toString("hex"));
    return cached && cached.expiresAt > this.now() ? cached.record : undefined;
  }

  async findByHash(hash: Buffer): Promise<ApiKeyRecord | null> {
    const { store, ttlMs, maxUnknownKeys = 10_000 } = this.options;
    const id = hash.toString("hex");
    const now = this.now();
    const cached = this.known.get(id);
    if (cached && cached.expiresAt > now) return cached.record;
    if ((this.unknown.get(id) ?? 0) > now) return null;

    const revocations = this.revocations;
    const record = await store.findApiKeyByHash(hash);
    this.known.delete(id);
    this.unknown.delete(id);
    if (record && ttlMs > 0 && revocations === this.revocations) {
      this.known.set(id, { record, expiresAt: now + ttlMs });
    } else if (!record && ttlMs > 0) {
      this.unknown.set(id, now + ttlMs);
      if (this.unknown.size > maxUnknownKeys) this.unknown.delete(this.unknown.keys().next().value!);
    }
    dropExpired(this.known, (entry) => entry.expiresAt, now);
    dropExpired(this.unknown, (expiresAt) => expiresAt, now);
    return record;
  }

  /** Drops the key with this id, after a revocation. */
  forget(keyId: string): void {
    this.revocations++;
    for (const [id, entry] of this.known) {
      if (entry.record.keyId === keyId) this.known.delete(id);
    }
  }

  private now(): number {
    return this.options.clock.now().getTime();
  }
}

function dropExpired<V>(entries: Map<string, V>, expiresAt: (value: V) => number, now: number): void {
  for (const [key, value] of entries) {
    if (expiresAt(value) > now) break;
    entries.delete(key);
  }
}
