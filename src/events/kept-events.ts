import { eventsOfPlayers } from "./apply/apply.js";
import type { QueuedEvent } from "./queue/entries.js";
import type { EventPosition, SegmentStore } from "./queue/segment-store.js";

/** Events a page of players/data answers at most… */
const PAGE_EVENTS = 1_000;
/** …and segments it reads at most: a page of a player with few events in a large queue ends early, not late. */
const PAGE_SEGMENTS = 200;

/**
 * The raw events still kept of one player (players/data): the queue's segments within the retention window, read in
 * queue order a page at a time, each page a bounded read, so a player with a million events is never in memory at
 * once. The cursor is the next event's place in the queue.
 */
export class KeptEvents {
  constructor(private readonly segments: SegmentStore) {}

  /** The page at `cursor` ("" first) of the events of `identityKeys`, and the next page's cursor ("" at the end). */
  async page(
    projectId: string,
    identityKeys: readonly string[],
    cursor: string,
  ): Promise<{ events: QueuedEvent[]; next: string }> {
    const { events, next } = await this.segments.pickEvents(
      projectId,
      positionOf(cursor),
      eventsOfPlayers(identityKeys),
      {
        limit: PAGE_EVENTS,
        segments: PAGE_SEGMENTS,
      },
    );
    return { events, next: next === null ? "" : `${next.seq}.${next.index}` };
  }
}

/** The place a cursor names (its form, `<segment>.<index>`, is the proto's rule on DataRequest.cursor). */
function positionOf(cursor: string): EventPosition {
  if (cursor === "") return { seq: 0, index: 0 };
  const [seq, index] = cursor.split(".").map(Number);
  return { seq, index };
}
