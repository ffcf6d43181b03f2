import { eventsOfPlayers } from "./apply/apply.js";
import type { QueuedEvent } from "./queue/entries.js";
import type { EventPosition, SegmentStore } from "./queue/segment-store.js";

/** Events a batch of players/data holds at most… */
const PAGE_EVENTS = 1_000;
/** …and segments a read of one scans at most: a player with few events in a large queue is read in short steps. */
const PAGE_SEGMENTS = 200;

/**
 * The raw events still kept of one player (players/data): the queue's segments within the retention window, read in
 * queue order a bounded page at a time, the next read only once the last batch was taken, so a player with a million
 * events is never in memory at once.
 */
export class KeptEvents {
  constructor(private readonly segments: SegmentStore) {}

  /** The events of `identityKeys` in queue order, a non-empty batch of at most PAGE_EVENTS at a time. */
  async *batches(projectId: string, identityKeys: readonly string[]): AsyncGenerator<QueuedEvent[]> {
    const pick = eventsOfPlayers(identityKeys);
    for (let from: EventPosition | null = { seq: 0, index: 0 }; from !== null;) {
      const { events, next } = await this.segments.pickEvents(projectId, from, pick, {
        limit: PAGE_EVENTS,
        segments: PAGE_SEGMENTS,
      });
      if (events.length > 0) yield events;
      from = next;
    }
  }
}
