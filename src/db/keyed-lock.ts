import { waitedTooLong, type WaitOptions } from "./gate.js";

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

  /**
   * Runs `fn` holding every key; keys are taken in sorted order so two callers
   * can never deadlock. When taking them all lasts past `waitLimitMs`, the keys
   * taken are let go and an UnavailableError is thrown without `fn` running.
   */
  async run<T>(keys: readonly string[], fn: () => Promise<T>, { waitLimitMs }: WaitOptions = {}): Promise<T> {
    const releases: (() => void)[] = [];
    const deadline = waitLimitMs === undefined ? undefined : Date.now() + waitLimitMs;
    try {
      for (const key of [...new Set(keys)].sort()) releases.push(await this.acquire(key, deadline, waitLimitMs));
      return await fn();
    } finally {
      for (const release of releases.reverse()) release();
    }
  }

  private async acquire(key: string, deadline: number | undefined, waitLimitMs = 0): Promise<() => void> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    // A caller that gives up releases at once; those behind it still wait for `previous`.
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    // The key is forgotten once the tail settles (after `previous` too, for a caller that gave up).
    const letGo = () => {
      release();
      void tail.then(() => {
        if (this.tails.get(key) === tail) this.tails.delete(key);
      });
    };
    if (deadline === undefined) {
      await previous;
      return letGo;
    }
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<"expired">((resolve) => {
      timer = setTimeout(() => resolve("expired"), Math.max(0, deadline - Date.now()));
    });
    const outcome = await Promise.race([previous.then(() => "turn" as const), expired]);
    clearTimeout(timer);
    if (outcome === "expired") {
      letGo();
      throw waitedTooLong(waitLimitMs);
    }
    return letGo;
  }
}
