import type { QueueState } from "../queue/queue-store.js";
import type { SegmentStore } from "../queue/segment-store.js";

/** A sequence number reserved and not written for this long was given up by its writer. */
const GAP_GRACE_MS = 30_000;

/** The projects' queues stopped at a sequence number reserved and not written (its writer may be dead), and since when. */
export class QueueGaps {
  private readonly gaps = new Map<string, { seq: number; sinceMs: number }>();

  constructor(private readonly segments: SegmentStore) {}

  /** The next sequence number is not written: wait for its writer, then give it up with a tombstone (true). */
  async close(state: QueueState, now: Date): Promise<boolean> {
    const seq = state.applied + 1;
    const gap = this.gaps.get(state.projectId);
    if (gap?.seq !== seq) this.gaps.set(state.projectId, { seq, sinceMs: now.getTime() });
    if (now.getTime() - this.gaps.get(state.projectId)!.sinceMs < GAP_GRACE_MS) return false;
    // Whether the tombstone or the late segment won the sequence number, it is there now.
    await this.segments.insertTombstone(state.projectId, seq, now);
    return true;
  }

  /** The project's queue moved on. */
  closed(projectId: string): void {
    this.gaps.delete(projectId);
  }
}
