/** A chunk as an instance holds it: its decoded value and the version it was read or written at (0: no document). */
export interface Cached<T> {
  value: T;
  v: number;
  bytes: number;
}

/**
 * What an instance read and wrote of the stored sets, least recently used first out, within a budget of bytes
 * (CACHE_MB). Values are never changed in place: a write puts a new one, so a read that took one keeps it whole.
 */
export class ChunkCache {
  private readonly entries = new Map<string, Cached<unknown>>();
  private used = 0;

  constructor(private readonly budgetBytes: number) {}

  get<T>(key: string): Cached<T> | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry as Cached<T>;
  }

  set<T>(key: string, entry: Cached<T>): void {
    this.delete(key);
    if (entry.bytes > this.budgetBytes) return;
    this.entries.set(key, entry);
    this.used += entry.bytes;
    for (const [oldest, old] of this.entries) {
      if (this.used <= this.budgetBytes) break;
      this.entries.delete(oldest);
      this.used -= old.bytes;
    }
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.used -= entry.bytes;
  }

  /** Forgets every key starting with `prefix` (a project's, after a write whose outcome is unknown). */
  deletePrefix(prefix: string): void {
    for (const key of this.entries.keys()) if (key.startsWith(prefix)) this.delete(key);
  }

  /** Bytes held (a metric). */
  get bytes(): number {
    return this.used;
  }
}
