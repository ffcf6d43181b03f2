/**
 * At most `limit` calls of `run` in flight; the rest wait in arrival order.
 * The service queues database work here rather than in the driver's pool or
 * inside the engine, where the wait would count against the database deadline.
 */
export class Gate {
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.inFlight >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
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
}
