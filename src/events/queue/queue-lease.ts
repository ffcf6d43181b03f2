import { randomUUID } from "node:crypto";
import type { QueueStateStore } from "./queue.js";

/** How the lease stands after a pass asked for it. */
export type LeaseTaken =
  /** Held since the worker last had it, without a gap: no other worker applied anything meanwhile. */
  | "continued"
  /** Taken after it had run out (or on the first pass): another worker may have applied and stored plans since. */
  | "resumed"
  /** Another worker holds it. */
  | "refused";

/**
 * The apply worker's lease on the queue (one worker applies at a time). It is renewed once half of it has run, not
 * on every segment: no other worker can take it before it runs out, so the command a renewal costs is saved on most
 * segments.
 */
export class QueueLease {
  private readonly owner = randomUUID();
  /** Until when the lease runs, as this worker last took it; undefined when it does not hold it. */
  private until: Date | undefined;

  constructor(
    private readonly queue: QueueStateStore,
    private readonly leaseMs: number,
  ) {}

  /** Takes the lease, or renews it when half of it has run. */
  async take(now: Date): Promise<LeaseTaken> {
    if (this.until !== undefined && now.getTime() < this.until.getTime() - this.leaseMs / 2) return "continued";
    const until = new Date(now.getTime() + this.leaseMs);
    if (!(await this.queue.takeLease(this.owner, now, until))) {
      this.until = undefined;
      return "refused";
    }
    const lapsed = this.until === undefined || now >= this.until;
    this.until = until;
    return lapsed ? "resumed" : "continued";
  }

  /** Whether this worker still holds the lease at `now`: no other worker can have applied anything since it took it. */
  holds(now: Date): boolean {
    return this.until !== undefined && now < this.until;
  }

  async release(): Promise<void> {
    this.until = undefined;
    await this.queue.releaseLease(this.owner);
  }
}
