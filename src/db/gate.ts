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
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

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
    } finally {
      // The slot passes straight to the next waiter, so a newcomer can never overtake it.
      const next = this.waiting.shift();
      if (next) next();
      else this.inFlight--;
    }
  }

  private turn(waitLimitMs: number | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer =
        waitLimitMs === undefined
          ? undefined
          : setTimeout(() => {
              this.waiting.splice(this.waiting.indexOf(wake), 1);
              reject(waitedTooLong(waitLimitMs));
            }, waitLimitMs);
      this.waiting.push(wake);
    });
  }
}

export function waitedTooLong(waitLimitMs: number): UnavailableError {
  return new UnavailableError(`database busy: no turn within ${waitLimitMs} ms, try again later`);
}
