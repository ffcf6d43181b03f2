import type { AdminStore, ApiKeyRecord } from "./store.js";

interface Entry {
  record: ApiKeyRecord;
  expiresAt: number;
}

/**
 * API key records by hash, kept for `ttlMs` so that most requests skip the
 * lookup. Only keys found are kept, so a stream of made-up keys cannot grow it.
 * A key revoked through this process is dropped at once; another instance
 * refuses it within `ttlMs`.
 */
export class ApiKeyCache {
  // Insertion order is expiry order (one ttl for all), so expired entries are always at the front.
  private readonly entries = new Map<string, Entry>();
  /** Bumped by each revocation, so a lookup that raced one does not cache what it read before it. */
  private revocations = 0;

  constructor(
    private readonly store: AdminStore,
    private readonly ttlMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  async findByHash(hash: Buffer): Promise<ApiKeyRecord | null> {
    const id = hash.toString("hex");
    const now = this.clock();
    const cached = this.entries.get(id);
    if (cached && cached.expiresAt > now) return cached.record;

    const revocations = this.revocations;
    const record = await this.store.findApiKeyByHash(hash);
    this.entries.delete(id);
    if (record && this.ttlMs > 0 && revocations === this.revocations)
      this.entries.set(id, { record, expiresAt: now + this.ttlMs });
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt > now) break;
      this.entries.delete(key);
    }
    return record;
  }

  /** Drops the key with this id, after a revocation. */
  forget(keyId: string): void {
    this.revocations++;
    for (const [id, entry] of this.entries) {
      if (entry.record.keyId === keyId) this.entries.delete(id);
    }
  }
}
