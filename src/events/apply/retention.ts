import type { CohortRollupStore } from "../rollups/cohort-rollup-store.js";
import { monthOf, type RetentionWindow } from "../rollup-keys.js";
import type { EventIdStore } from "../queue/event-id-store.js";
import type { PlayerRollupStore } from "../rollups/player-rollup-store.js";
import type { QueueStateStore } from "../queue/queue.js";
import type { SegmentStore } from "../queue/segment-store.js";

const SWEEP_EVERY_MS = 60 * 60 * 1000;
/** A sweep that failed (a deadline on a large database after a start) is tried again this soon. */
const RETRY_AFTER_MS = 60 * 1000;
/** Documents one step of a sweep deletes at most: a step fits a database deadline, however long the service stopped. */
export const SWEEP_STEP = 1_000;

/** A sweep under way: its parts in order, each deleting at most `limit` documents a step; the number it found. */
interface Sweep {
  startedMs: number;
  parts: ((limit: number) => Promise<number>)[];
}

export interface RetentionOptions {
  window: RetentionWindow;
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
 * hourly sweep, in steps of at most SWEEP_STEP documents, one a worker pass,
 * so segments are applied between them; days of an active player's history go
 * when it is next written; reads count nothing before the window.
 */
export class Retention {
  private lastSweep = 0;
  private sweeping: Sweep | undefined;

  constructor(private readonly options: RetentionOptions) {}

  /**
   * One step of the sweep under way, or of a new one when the last is an hour old (a minute after one failed); the
   * worker calls it between segments, holding the lease.
   */
  async sweepIfDue(now: Date): Promise<void> {
    if (!this.sweeping && now.getTime() - this.lastSweep < SWEEP_EVERY_MS) return;
    try {
      this.sweeping ??= await this.begin(now);
      if (await this.step(this.sweeping)) {
        this.lastSweep = this.sweeping.startedMs;
        this.sweeping = undefined;
      }
    } catch (error) {
      this.sweeping = undefined;
      this.lastSweep = now.getTime() - SWEEP_EVERY_MS + RETRY_AFTER_MS;
      throw error;
    }
  }

  private async begin(now: Date): Promise<Sweep> {
    const { window, queue, segments, eventIds, playerRollups, cohortRollups } = this.options;
    const oldest = window.oldest(now);
    const firstDay = window.firstDay(now);
    const { applied } = await queue.read();
    return {
      startedMs: now.getTime(),
      parts: [
        (limit) => segments.deleteExpired(oldest, applied, limit),
        (limit) => eventIds.deleteExpired(oldest, limit),
        (limit) => playerRollups.deleteIdle(firstDay, limit),
        (limit) => cohortRollups.deleteBefore(monthOf(firstDay), limit),
      ],
    };
  }

  /** One step of the sweep's first part left; true once no part is left. */
  private async step(sweep: Sweep): Promise<boolean> {
    const part = sweep.parts[0];
    if (part && (await part(SWEEP_STEP)) < SWEEP_STEP) sweep.parts.shift();
    return sweep.parts.length === 0;
  }
}
