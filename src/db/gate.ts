import { UnavailableError } from "../errors.js";

/** How long a caller waits for its turn before giving up. */
export interface WaitOptions {
  /** Milliseconds; absent means no limit. Callers pass the database deadline (Config.dbTimeoutMs). */
  waitLimitMs?: number;
}

/**
 * At most `limit` calls of `run` in flight; the rest wait in arrival order.
 * The service queues database work here rather than in the driver's pool or
 * inside the engine, where the wait would count against the database deadline.
 */
export class Gate {
  private inFlight = 0;
  private readonly waiting: { wake: () => void; fail: (error: unknown) => void }[] = [];

  /**
   * `shed`: maps a task's failure to the error every caller waiting at that
   * moment gets at once (a database that did not answer the task ahead will
   * not answer theirs within their deadline either); undefined: they wait on.
   */
  constructor(
    private readonly limit: number,
    private readonly shed: (error: unknown) => unknown = () => undefined,
  ) {}

  /**
   * Runs `task` when a slot is free. A caller that waited `waitLimitMs` in
   * vain gets an UnavailableError and its task never runs: under sustained
   * load the queue stays bounded by the deadline, and work whose client has
   * given up is not done later.
   */
  async run<T>(task: () => Promise<T>, { waitLimitMs }: WaitOptions = {}): Promise<T> {
    if (this.inFlight >= this.limit) await this.turn(waitLimitMs);
    else this.inFlight++;
    try {
      return await task();
    } catch (error) {
      const shed = this.shed(error);
      if (shed !== undefined) for (const waiter of this.waiting.splice(0)) waiter.fail(shed);
      throw error;
    } finally {
      // The slot passes straight to the next waiter, so a newcomer can never overtake it.
      const next = this.waiting.shift();
      if (next) next.wake();
      else this.inFlight--;
    }
  }

  private turn(waitLimitMs: number | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        wake: () => {
          clearTimeout(timer);
          resolve();
        },
        fail: (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      const timer =
        waitLimitMs === undefined
          ? undefined
          : setTimeout(() => {
              this.waiting.splice(this.waiting.indexOf(waiter), 1);
              reject(waitedTooLong(waitLimitMs));
            }, waitLimitMs);
      this.waiting.push(waiter);
    });
  }
}

export function waitedTooLong(waitLimitMs: number): UnavailableError {
  return new UnavailableError(`database busy: no turn within ${waitLimitMs} ms, try again later`);
}

/**
 * Point reads of one request in flight at once. Side by side is how to read
 * many documents fast on FerretDB (`$in` scans); a window keeps most of the
 * speed without one request taking every connection.
 */
export const READS_IN_FLIGHT = 16;

/**
 * Point reads of the whole process in flight at once. Per request alone, 8
 * update calls of 100 entries sent 128 reads at once: they queued in the
 * driver's pool and inside FerretDB past the database deadline (503s in the
 * players bench at 100,000 profiles); queued here, they wait without one.
 */
const reads = new Gate(32);

/** `read(item)` for every item, at most READS_IN_FLIGHT at once (and the process's limit); answers in the order of `items`. */
export async function sideBySide<T, R>(items: readonly T[], read: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await reads.run(() => read(items[i]));
    }
  };
  await Promise.all(Array.from({ length: Math.min(READS_IN_FLIGHT, items.length) }, worker));
  return results;
}
