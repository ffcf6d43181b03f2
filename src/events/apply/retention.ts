import type { ActivityStore } from "../activity/activity-store.js";
import type { RawEventStore } from "../activity/raw-event-store.js";
import type { EventIdStore } from "../queue/event-id-store.js";
import { daysBetween, parseDay, type RetentionWindow } from "../rollup-keys.js";

const SWEEP_EVERY_MS = 60 * 60 * 1000;
/** Documents one step of a sweep deletes at most: a step fits a database deadline, however long the service stopped. */
export const SWEEP_STEP = 1_000;
/** Days before the window a sweep looks at: a service stopped for longer leaves older days to a manual clean-up. */
const SWEPT_DAYS = 31;

export interface RetentionOptions {
  window: RetentionWindow;
  activity: ActivityStore;
  raw: RawEventStore;
  eventIds: EventIdStore;
}

/**
 * EVENT_RETENTION_DAYS, kept by the service itself (TTL indexes are not on every engine): each hour, a project's days
 * before the window go (their raw events, a step of at most SWEEP_STEP at a time, then their sets), and event_id
 * claims older than the window; the worker runs a step between segments, holding the project's lease. Reads count
 * nothing before the window meanwhile.
 */
export class Retention {
  private readonly lastSwept = new Map<string, number>();
  private idsSweptMs = 0;

  constructor(private readonly options: RetentionOptions) {}

  /** Whether the project's hourly sweep is due. */
  due(projectId: string, now: Date): boolean {
    return now.getTime() - (this.lastSwept.get(projectId) ?? 0) >= SWEEP_EVERY_MS;
  }

  /** One step of the project's sweep when one is due; true when it did some work (the worker then comes back). */
  async sweepIfDue(projectId: string, now: Date): Promise<boolean> {
    const { window, activity, raw } = this.options;
    if (!this.due(projectId, now)) return false;
    const firstDay = parseDay(window.firstDay(now))!;
    const before = daysBetween(new Date(firstDay.getTime() - SWEPT_DAYS * 86_400_000), firstDay).slice(0, -1);
    for (const day of (await activity.namesOn(projectId, before)).keys()) {
      if ((await raw.deleteDay(projectId, day, SWEEP_STEP)) === SWEEP_STEP) return true;
      await activity.dropDay(projectId, day);
      return true;
    }
    this.lastSwept.set(projectId, now.getTime());
    return false;
  }

  /** One step of the sweep of event_id claims past their window when one is due (it scans: once an hour, for all). */
  async sweepIdsIfDue(now: Date): Promise<boolean> {
    if (now.getTime() - this.idsSweptMs < SWEEP_EVERY_MS) return false;
    const found = await this.options.eventIds.deleteExpired(now, SWEEP_STEP);
    if (found < SWEEP_STEP) this.idsSweptMs = now.getTime();
    return found > 0;
  }
}
