import type { QueueStore } from "../queue/queue-store.js";

/** A lease held: its epoch (fencing the holder's writes) and until when, as this worker last took or renewed it. */
interface HeldLease {
  epoch: number;
  untilMs: number;
}

/** The leases one worker holds on projects' queues: taken when there is work, renewed on a timer, let go. */
export class ProjectLeases {
  private readonly held = new Map<string, HeldLease>();

  constructor(
    private readonly queue: QueueStore,
    private readonly owner: string,
    private readonly leaseMs: number,
  ) {}

  /**
   * The project's lease while held and not run out; else, when `wanted`, taken now (`onResumed` told when it was
   * another's or none's before); null when not wanted or another worker holds it.
   */
  async take(projectId: string, now: Date, wanted: boolean, onResumed: () => void): Promise<HeldLease | null> {
    const held = this.held.get(projectId);
    if (held && held.untilMs > now.getTime()) return held;
    if (!wanted) return null;
    const until = new Date(now.getTime() + this.leaseMs);
    const taken = await this.queue.takeLease(projectId, this.owner, now, until);
    if (!taken) {
      this.held.delete(projectId);
      return null;
    }
    if (taken.resumed) onResumed();
    const lease = { epoch: taken.epoch, untilMs: until.getTime() };
    this.held.set(projectId, lease);
    return lease;
  }

  /** Renews every lease held (on a timer: a long step keeps its lease); one another worker took is forgotten. */
  async renew(now: Date): Promise<void> {
    for (const [projectId, held] of this.held) {
      const until = new Date(now.getTime() + this.leaseMs);
      const taken = await this.queue.takeLease(projectId, this.owner, now, until);
      if (!taken || taken.epoch !== held.epoch) this.held.delete(projectId);
      else held.untilMs = until.getTime();
    }
  }

  /** Another worker took the project's lease over. */
  lost(projectId: string): void {
    this.held.delete(projectId);
  }

  /** Lets go of every lease held but those `kept` answers true of. */
  async release(kept: (projectId: string) => boolean = () => false): Promise<void> {
    for (const [projectId, { epoch }] of this.held) {
      if (kept(projectId)) continue;
      this.held.delete(projectId);
      await this.queue.releaseLease(projectId, this.owner, epoch);
    }
  }
}
