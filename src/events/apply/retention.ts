import type { CohortRollupStore } from "../rollups/cohort-rollup-store.js";
import { dayOf, monthOf, retentionStart } from "../days.js";
import type { EventIdStore } from "../queue/event-id-store.js";
import type { PlayerRollupStore } from "../rollups/player-rollup-store.js";
import type { QueueStateStore } from "../queue/queue-state-store.js";
import type { SegmentStore } from "../queue/segment-store.js";

const SWEEP_EVERY_MS = 60 * 60 * 1000;
/** A sweep that failed (a deadline on a large database after a start) is tried again this soon. */
const RETRY_AFTER_MS = 60 * 1000;

export interface RetentionOptions {
  days: number;
  queue: QueueStateStore;
  segments: SegmentStore;
  eventIds: EventIdStore;
  playerRollups: PlayerRollupStore;
  cohortRollups: CohortRollupStore;
}

/**
 * EVENT_RETENTION_DAYS, kept by the service itself (TTL indexes are not
 * available on every engine): raw events, event_id claims, idle players'
 * histories and whole months of cohort rollups before the window go in an
 * hourly sweep; days of an active player's history go when it is next
 * written; reads count nothing before the window.
 */
export class Retention {
  private lastSweep = 0;

  constructor(private readonly options: RetentionOptions) {}

  /** The first day inside the window. */
  firstDay(now: Date): string {
    return dayOf(retentionStart(now, this.options.days));
  }

  /** The oldest event time accepted now. */
  oldest(now: Date): Date {
    return retentionStart(now, this.options.days);
  }

  /**
   * Sweeps when the last sweep is an hour old, or a minute after one failed;
   * the worker calls it between segments, holding the lease.
   */
  async sweepIfDue(now: Date): Promise<void> {
    if (now.getTime() - this.lastSweep < SWEEP_EVERY_MS) return;
    try {
      await this.sweep(now);
      this.lastSweep = now.getTime();
    } catch (error) {
      this.lastSweep = now.getTime() - SWEEP_EVERY_MS + RETRY_AFTER_MS;
      throw error;
    }
  }

  async sweep(now: Date): Promise<void> {
    const { queue, segments, eventIds, playerRollups, cohortRollups } = this.options;
    const oldest = this.oldest(now);
    const { applied } = await queue.read();
    await segments.deleteExpired(oldest, applied);
    await eventIds.deleteExpired(oldest);
    await playerRollups.deleteIdle(this.firstDay(now));
    await cohortRollups.deleteBefore(monthOf(this.firstDay(now)));
  }
}
