import type { Clock } from "../../clock.js";
import { UnavailableError } from "../../errors.js";
import type { QueueStore } from "./queue-store.js";
import { isControl, type SegmentStore, type SegmentWork } from "./segment-store.js";

/** Sequence numbers a writer tries before giving up (each loss means a worker tombstoned a stalled one). */
const ENQUEUE_ATTEMPTS = 5;

/** Puts work on a project's queue: ingest calls, folds and erasures, and the worker's own follow-ups. */
export class QueueWriter {
  private readonly listeners: ((projectId: string) => void)[] = [];

  constructor(private readonly options: { queue: QueueStore; segments: SegmentStore; clock: Clock }) {}

  /** Calls `listener` after each segment this writer queues (the apply worker of this process wakes). */
  onQueued(listener: (projectId: string) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Queues `work` (carrying `count` events) under a new sequence number of the project and answers it; on a loss to
   * a tombstone, under the next. `receivedAt`: the instant an ingest answers as its server_time, so freshness never
   * claims a waiting event.
   */
  async enqueue(projectId: string, work: SegmentWork, count = 0, receivedAt = this.options.clock.now()) {
    const { queue, segments } = this.options;
    for (let attempts = 0; attempts < ENQUEUE_ATTEMPTS; attempts++) {
      const seq = await queue.reserve(projectId);
      if (await segments.insert({ seq, projectId, receivedAt, count, work })) {
        if (isControl(work)) await queue.addControl(projectId, seq);
        for (const listener of this.listeners) listener(projectId);
        return seq;
      }
    }
    throw new UnavailableError("the event queue is stalled; nothing was queued, try again");
  }
}
