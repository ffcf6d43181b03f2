import type { Clock } from "../../clock.js";
import { sideBySide } from "../../db/gate.js";
import type { QueueStateStore } from "./queue-state-store.js";
import type { SegmentHead, SegmentStore } from "./segment-store.js";

export interface Lag {
  /** Age of the oldest accepted event behind the apply cursor; 0 when none waits. */
  seconds: number;
  /** Events in the segments behind the apply cursor. */
  depth: number;
}

/** Measures how far the apply worker is behind ingestion, from the database: right whichever instance applies. */
export class QueueLagMeter {
  private measuring: Promise<Lag> | undefined;
  /** The heads of segments behind the cursor, read once each (a segment is large; its head never changes). */
  private readonly heads = new Map<number, SegmentHead>();

  constructor(
    private readonly queue: QueueStateStore,
    private readonly segments: SegmentStore,
    private readonly clock: Clock,
  ) {}

  /**
   * Measures the lag now from the segments waiting behind the cursor and not
   * applied ahead of it (a sequence number whose writer died holds no events;
   * one not written yet holds none so far). Each segment's head is read once: segments never change.
   * Calls made while a measurement runs share it (a /metrics scrape asks three gauges at once).
   */
  measure(): Promise<Lag> {
    this.measuring ??= this.measureNow().finally(() => (this.measuring = undefined));
    return this.measuring;
  }

  private async measureNow(): Promise<Lag> {
    const state = await this.queue.read();
    // A segment applied ahead of the cursor waits no more: its events are counted already.
    const waiting = (await this.waitingHeads(state.applied, state.reserved)).filter(
      (head) => head.count > 0 && !state.ahead.has(head.seq),
    );
    const oldest = waiting.reduce((min, head) => Math.min(min, head.receivedAt.getTime()), Infinity);
    const seconds = waiting.length === 0 ? 0 : Math.max(0, (this.clock.now().getTime() - oldest) / 1000);
    return { seconds, depth: waiting.reduce((sum, head) => sum + head.count, 0) };
  }

  private async waitingHeads(applied: number, reserved: number): Promise<SegmentHead[]> {
    for (const seq of this.heads.keys()) if (seq <= applied) this.heads.delete(seq);
    const unread: number[] = [];
    for (let seq = applied + 1; seq <= reserved; seq++) if (!this.heads.has(seq)) unread.push(seq);
    for (const head of await sideBySide(unread, (seq) => this.segments.head(seq))) {
      if (head) this.heads.set(head.seq, head);
    }
    return [...this.heads.values()].filter((head) => head.seq <= reserved);
  }
}
