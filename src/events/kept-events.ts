import type { Clock } from "../clock.js";
import type { PlayerNumbers } from "../sets/player-numbers.js";
import type { ActivityStore } from "./activity/activity-store.js";
import type { RawEventStore } from "./activity/raw-event-store.js";
import { identityOf } from "./apply/apply-batch.js";
import type { QueuedEvent } from "./queue/entries.js";
import type { QueueStore } from "./queue/queue-store.js";
import type { SegmentStore } from "./queue/segment-store.js";
import { daysBetween, parseDay, dayOf, type RetentionWindow } from "./rollup-keys.js";

export interface KeptEventsOptions {
  numbers: PlayerNumbers;
  activity: ActivityStore;
  raw: RawEventStore;
  queue: QueueStore;
  segments: SegmentStore;
  window: RetentionWindow;
  clock: Clock;
}

/**
 * The raw events still kept of one player (players/data): those applied, a day at a time (the days the player's
 * number has activity on, an indexed range of `event_raw` each, oldest first), then those still queued.
 */
export class KeptEvents {
  constructor(private readonly options: KeptEventsOptions) {}

  /** The events of `identityKeys`, a non-empty batch at a time. */
  async *batches(projectId: string, identityKeys: readonly string[]): AsyncGenerator<QueuedEvent[]> {
    const { numbers, activity, raw, queue, segments, window, clock } = this.options;
    const now = clock.now();
    const window_ = daysBetween(window.oldest(now), parseDay(dayOf(now))!);
    const days = new Set<string>();
    for (const number of new Set((await numbers.find(projectId, identityKeys)).values())) {
      for (const { day } of await activity.pairsOf(projectId, number, window_)) days.add(day);
    }
    // Oldest first across the keys (a device's events beside its player's): a day's events of every key, by time.
    for (const day of [...days].sort()) {
      const events: QueuedEvent[] = [];
      for (const key of identityKeys)
        for await (const batch of raw.ofPlayer(projectId, key, [day])) events.push(...batch);
      if (events.length > 0) yield events.sort((a, b) => a.t.getTime() - b.t.getTime());
    }
    const keys = new Set(identityKeys);
    const { applied, reserved } = await queue.read(projectId);
    for await (const events of segments.queuedEvents(projectId, applied + 1, reserved)) {
      const theirs = events.filter((event) => keys.has(identityOf(event)));
      if (theirs.length > 0) yield theirs;
    }
  }
}
