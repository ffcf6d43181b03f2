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
  /** Per key while callers queue on it: how many holders shed their waiters, and the error the last one gave them. */
  private readonly sheds = new Map<string, { count: number; error: unknown }>();

  /**
   * `shed`, as in Gate: maps a holder's failure to the error every caller
   * then waiting on one of its keys gets when its turn comes, instead of
   * running (a database that did not answer the holder will not answer them
   * within their deadline either); undefined: they run.
   */
  constructor(private readonly shed: (error: unknown) => unknown = () => undefined) {}

  /**
   * Runs `fn` holding every key; keys are taken in sorted order so two callers
   * can never deadlock. When taking them all lasts past `waitLimitMs`, the keys
   * taken are let go and an UnavailableError is thrown without `fn` running.
   */
  async run<T>(keys: readonly string[], fn: () => Promise<T>, { waitLimitMs }: WaitOptions = {}): Promise<T> {
    const releases: (() => void)[] = [];
    const deadline = waitLimitMs === undefined ? undefined : Date.now() + waitLimitMs;
    const unique = [...new Set(keys)].sort();
    const shedBefore = new Map(unique.map((key) => [key, this.sheds.get(key)?.count ?? 0]));
    try {
      for (const key of unique) {
        releases.push(await this.acquire(key, deadline, waitLimitMs));
        const shed = this.sheds.get(key);
        if (shed && shed.count > shedBefore.get(key)!) throw shed.error;
      }
      return await fn().catch((error: unknown) => {
        const shed = this.shed(error);
        if (shed !== undefined) {
          for (const key of unique) this.sheds.set(key, { count: (this.sheds.get(key)?.count ?? 0) + 1, error: shed });
        }
        throw error;
      });
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
        if (this.tails.get(key) !== tail) return;
        this.tails.delete(key);
        this.sheds.delete(key);
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
