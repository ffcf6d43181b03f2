import type { Clock } from "../../clock.js";
import { UnavailableError } from "../../errors.js";
import type { QueueStateStore } from "./queue-state-store.js";
import type { SegmentStore, SegmentWork } from "./segment-store.js";

/** Sequence numbers a writer tries before giving up (each loss means a worker tombstoned a stalled one). */
const ENQUEUE_ATTEMPTS = 5;

/** Puts work on the event queue: ingest calls, player changes, and the worker's own follow-ups. */
export class QueueWriter {
  private readonly listeners: (() => void)[] = [];

  constructor(private readonly options: { queue: QueueStateStore; segments: SegmentStore; clock: Clock }) {}

  /** Calls `listener` after each segment this writer queues (the apply worker of this process wakes). */
  onQueued(listener: () => void): void {
    this.listeners.push(listener);
  }

  /**
   * Queues `work` (carrying `count` events, the latest at `latest`) under a
   * new sequence number and answers it; on a loss to a tombstone, under the next.
   * `receivedAt`: the instant an ingest answers as its server_time, so freshness never claims a waiting event.
   */
  async enqueue(
    projectId: string,
    work: SegmentWork,
    count: number,
    latest: Date,
    receivedAt = this.options.clock.now(),
  ): Promise<number> {
    const { queue, segments } = this.options;
    for (let attempt = 0; attempt < ENQUEUE_ATTEMPTS; attempt++) {
      // The count joins the accepted total once, with the first sequence number.
      const seq = await queue.reserve(attempt === 0 ? count : 0);
      if (await segments.insert({ seq, projectId, receivedAt, count, work }, latest)) {
        for (const listener of this.listeners) listener();
        return seq;
      }
    }
    throw new UnavailableError("the event queue is stalled; nothing was queued, try again");
  }
}
