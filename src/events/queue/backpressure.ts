import type { Clock } from "../../clock.js";
import { QueueBehindError } from "../../errors.js";
import type { Lag, QueueLagMeter } from "./queue.js";

/** How long a measured lag stands for the next ingest calls: one read of the queue a second, however many calls. */
const MEASURED_LAG_REUSE_MS = 1_000;

/** Retry-After of a call refused for the queue's size: the queue drains continuously, and is measured each second. */
const QUEUE_SIZE_RETRY_AFTER_SECONDS = 10;

/** A limit of the queue whose passing refuses ingestion: its lag, or the number of events waiting in it. */
export type IngestLimit = "lag" | "queue_size";

export const INGEST_LIMITS: readonly IngestLimit[] = ["lag", "queue_size"];

export interface BackpressureOptions {
  /** The queue's lag, measured from the database: right whichever instance applies. */
  lag: Pick<QueueLagMeter, "measure">;
  clock: Clock;
  /** EVENT_MAX_LAG_SECONDS: past this lag, ingestion refuses whole calls. */
  maxLagSeconds: number;
  /** EVENT_MAX_QUEUE_EVENTS: with this many events waiting, ingestion refuses whole calls. */
  maxQueueEvents: number;
}

/**
 * Ingestion pushes back when the apply worker falls behind: while the oldest
 * waiting event is older than EVENT_MAX_LAG_SECONDS, or EVENT_MAX_QUEUE_EVENTS
 * events wait, a call of events is refused whole, so the queue stops growing
 * (in time and in size) and senders back off.
 */
export class Backpressure {
  private measured: { atMs: number; lag: Lag } | undefined;
  private measuring: Promise<Lag> | undefined;
  /** Events this instance admitted that the last measurement may not hold yet (counted twice rather than never). */
  private admittedSinceMeasured = 0;

  constructor(private readonly options: BackpressureOptions) {}

  /** The limits a queue `lag` behind has reached, each refusing ingestion; none while events are accepted. */
  limitsReached(lag: Lag): IngestLimit[] {
    const reached: IngestLimit[] = [];
    if (lag.seconds > this.options.maxLagSeconds) reached.push("lag");
    if (lag.depth >= this.options.maxQueueEvents) reached.push("queue_size");
    return reached;
  }

  /**
   * Admits a call of `events` events, or throws QueueBehindError, with a time
   * to wait, while a limit refuses events; answers the queue's lag, measured within the last second.
   */
  async admit(events: number): Promise<Lag> {
    const measured = await this.recentLag();
    const lag = { ...measured, depth: measured.depth + this.admittedSinceMeasured };
    const [limit] = this.limitsReached(lag);
    if (limit === undefined) {
      this.admittedSinceMeasured += events;
      return measured;
    }
    throw limit === "lag" ? this.behindInTime(lag) : this.fullQueue(lag);
  }

  private behindInTime(lag: Lag): QueueBehindError {
    const { maxLagSeconds } = this.options;
    // A hint, not a promise: how far past the limit the lag is, kept between 5 s and a minute.
    const retryAfterSeconds = Math.min(60, Math.max(5, Math.ceil(lag.seconds - maxLagSeconds)));
    return new QueueBehindError(
      `events: the queue is ${Math.floor(lag.seconds)} s behind (EVENT_MAX_LAG_SECONDS ${maxLagSeconds}); ` +
        `nothing was accepted, retry after ${retryAfterSeconds} s`,
      retryAfterSeconds,
    );
  }

  private fullQueue(lag: Lag): QueueBehindError {
    const retryAfterSeconds = QUEUE_SIZE_RETRY_AFTER_SECONDS;
    return new QueueBehindError(
      `events: the queue holds ${lag.depth} events not yet applied (EVENT_MAX_QUEUE_EVENTS ` +
        `${this.options.maxQueueEvents}); nothing was accepted, retry after ${retryAfterSeconds} s`,
      retryAfterSeconds,
    );
  }

  private async recentLag(): Promise<Lag> {
    const nowMs = this.options.clock.now().getTime();
    if (this.measured && nowMs - this.measured.atMs < MEASURED_LAG_REUSE_MS) return this.measured.lag;
    this.measuring ??= this.measure(nowMs).finally(() => (this.measuring = undefined));
    return this.measuring;
  }

  private async measure(nowMs: number): Promise<Lag> {
    // Events admitted while the measurement runs stay counted: the measurement may or may not hold them.
    const admittedBefore = this.admittedSinceMeasured;
    const lag = await this.options.lag.measure();
    this.admittedSinceMeasured -= admittedBefore;
    this.measured = { atMs: nowMs, lag };
    return lag;
  }
}
