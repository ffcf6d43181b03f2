/**
 * An in-process FIFO mutex per key. FerretDB 1.24 applies an update as
 * read-modify-write without isolation (measured: 50 concurrent `$inc` of one
 * document, or 50 version-guarded replaces, lose updates), so within this
 * process every write to one profile or one project registry is serialised
 * here; the version and count guards in the store make the same writes safe
 * between processes on MongoDB.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `fn` holding every key; keys are taken in sorted order so two callers can never deadlock. */
  async run<T>(keys: readonly string[], fn: () => Promise<T>): Promise<T> {
    const releases: (() => void)[] = [];
    try {
      for (const key of [...new Set(keys)].sort()) releases.push(await this.acquire(key));
      return await fn();
    } finally {
      for (const release of releases.reverse()) release();
    }
  }

  private async acquire(key: string): Promise<() => void> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    return () => {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
  }
}
