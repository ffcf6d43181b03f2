import type { Clock } from "../../clock.js";
import { sideBySide } from "../../db/gate.js";
import type { QueueState, QueueStore } from "./queue-store.js";
import type { SegmentHead, SegmentStore } from "./segment-store.js";

export interface Lag {
  /** Age of the oldest accepted event not yet applied; 0 when none waits. */
  seconds: number;
  /** Events in the segments not yet applied. */
  depth: number;
}

/**
 * Measures how far the apply is behind ingestion, from the database (right whichever instance applies): a project's
 * lag, its events' freshness and its backpressure; the worst of all projects for `/readyz` and `/metrics`.
 */
export class QueueLagMeter {
  /** The heads of segments waiting, read once each (a segment never changes). */
  private readonly heads = new Map<string, SegmentHead>();
  private measuringAll: Promise<Lag> | undefined;

  constructor(
    private readonly queue: QueueStore,
    private readonly segments: SegmentStore,
    private readonly clock: Clock,
  ) {}

  async ofProject(projectId: string): Promise<Lag> {
    return this.lagOf(await this.queue.read(projectId));
  }

  /** The worst lag of every project, and the events waiting in all (calls while one runs share it). */
  measure(): Promise<Lag> {
    this.measuringAll ??= this.measureAll().finally(() => (this.measuringAll = undefined));
    return this.measuringAll;
  }

  private async measureAll(): Promise<Lag> {
    const lags = await Promise.all((await this.queue.readAll()).map((state) => this.lagOf(state)));
    return {
      seconds: Math.max(0, ...lags.map((lag) => lag.seconds)),
      depth: lags.reduce((sum, lag) => sum + lag.depth, 0),
    };
  }

  /**
   * The oldest waiting segment's age, and the events waiting (a folded or erased player's segment carried out ahead
   * waits no more; a sequence number not written yet holds nothing so far). Each segment's head is read once: a
   * segment never changes.
   */
  private async lagOf(state: QueueState): Promise<Lag> {
    const { projectId, applied, reserved } = state;
    if (reserved <= applied) return { seconds: 0, depth: 0 };
    const waiting = Array.from({ length: reserved - applied }, (_, i) => applied + 1 + i);
    for (const key of this.heads.keys()) {
      const [project, seq] = key.split(" ");
      if (project === projectId && Number(seq) <= applied) this.heads.delete(key);
    }
    const unread = waiting.filter((seq) => !this.heads.has(`${projectId} ${seq}`));
    for (const head of await sideBySide(unread, (seq) => this.segments.head(projectId, seq))) {
      if (head) this.heads.set(`${projectId} ${head.seq}`, head);
    }
    let oldest = Infinity;
    let depth = 0;
    for (const seq of waiting) {
      const head = this.heads.get(`${projectId} ${seq}`);
      if (!head || head.count === 0 || state.ahead.has(seq)) continue;
      oldest = Math.min(oldest, head.receivedAt.getTime());
      depth += head.count;
    }
    const seconds = oldest === Infinity ? 0 : Math.max(0, (this.clock.now().getTime() - oldest) / 1000);
    return { seconds, depth };
  }
}
