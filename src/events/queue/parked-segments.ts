import { NotFoundError } from "../../errors.js";
import type { ParkedSegment, ParkedStore } from "./parked-store.js";
import type { QueueWriter } from "./queue-writer.js";
import type { SegmentStore } from "./segment-store.js";

/** The segments parked after failing again and again: what an admin lists, and retries one at a time. */
export class ParkedSegments {
  constructor(private readonly options: { parked: ParkedStore; segments: SegmentStore; writer: QueueWriter }) {}

  list(projectId?: string): Promise<ParkedSegment[]> {
    return this.options.parked.list(projectId);
  }

  /**
   * Queues a parked segment's work again at the end of its project's queue (its events keep the event_id claims they
   * made), then takes it off the list; answers its new place. A retry cut short before its segment left the list
   * queues it again: the second apply counts nothing twice (each event's claim is its segment's own).
   */
  async retry(projectId: string, seq: number): Promise<number> {
    const { parked, segments, writer } = this.options;
    const found = await parked.find(projectId, seq);
    const segment = found && (await segments.find(projectId, seq));
    if (!found || !segment?.work) throw new NotFoundError(`seq: the project has no parked segment ${seq}`);
    const work =
      segment.work.kind === "events"
        ? { ...segment.work, earlier: [...(segment.work.earlier ?? []), seq] }
        : segment.work;
    const requeued = await writer.enqueue(projectId, work, segment.count);
    await segments.deleteApplied(projectId, [seq]);
    await parked.remove(projectId, seq);
    return requeued;
  }
}
