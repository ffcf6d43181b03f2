import type { Clock } from "../clock.js";
import { QueueBehindError } from "../errors.js";
import type { Lag } from "./queue-lag.js";

/** How long a measured lag stands for the next ingest calls: one read of the queue a second, however many calls. */
const MEASURED_LAG_REUSE_MS = 1_000;

export interface BackpressureOptions {
  /** Measures the queue's lag from the database (ApplyWorker.measureLag): right whichever instance applies. */
  measureLag: () => Promise<Lag>;
  clock: Clock;
  /** EVENT_MAX_LAG_SECONDS: past this lag, ingestion refuses whole calls. */
  maxLagSeconds: number;
}

/**
 * Ingestion pushes back when the apply worker falls behind: while the oldest
 * waiting event is older than EVENT_MAX_LAG_SECONDS, a call of events is
 * refused whole, so the queue stops growing and senders back off.
 */
export class Backpressure {
  private measured: { atMs: number; lag: Lag } | undefined;

  constructor(private readonly options: BackpressureOptions) {}

  /** Whether a queue `lag` behind refuses ingestion. */
  refuses(lag: Lag): boolean {
    return lag.seconds > this.options.maxLagSeconds;
  }

  /** The queue's lag, measured within the last second; throws QueueBehindError, with a time to wait, while it refuses events. */
  async admit(): Promise<Lag> {
    const lag = await this.recentLag();
    if (!this.refuses(lag)) return lag;
    const { maxLagSeconds } = this.options;
    // A hint, not a promise: how far past the limit the lag is, kept between 5 s and a minute.
    const retryAfterSeconds = Math.min(60, Math.max(5, Math.ceil(lag.seconds - maxLagSeconds)));
    throw new QueueBehindError(
      `events: the queue is ${Math.floor(lag.seconds)} s behind (EVENT_MAX_LAG_SECONDS ${maxLagSeconds}); ` +
        `nothing was accepted, retry after ${retryAfterSeconds} s`,
      retryAfterSeconds,
    );
  }

  private async recentLag(): Promise<Lag> {
    const nowMs = this.options.clock.now().getTime();
    if (this.measured && nowMs - this.measured.atMs < MEASURED_LAG_REUSE_MS) return this.measured.lag;
    const lag = await this.options.measureLag();
    this.measured = { atMs: nowMs, lag };
    return lag;
  }
}
