import type { Clock } from "../../clock.js";
import { QueueBehindError } from "../../errors.js";
import type { ChangedPlayers } from "../changed-players.js";

/** When to come back after an update refused for the changes waiting: their resyncs wait behind the event queue. */
const RETRY_AFTER_SECONDS = 30;

/** How long a count of a project's waiting changes stands for the next calls. */
const COUNT_REUSE_MS = 1_000;

export interface ChangesLimitOptions {
  changes: ChangedPlayers;
  clock: Clock;
  /** PLAYER_CHANGES_MAX: changed players of a project waiting for their resync past which updates are refused (Infinity: none). */
  max: number;
  /** Whether segments (the resyncs among them) wait behind the event queue's apply cursor. */
  queueBehind: () => Promise<boolean>;
}

/**
 * The bound of the record of changed players: while `max` players of a project wait for their resync (an event backlog
 * holds the resyncs back), an update is refused whole, so what a backlog adds to the record is bounded whoever calls.
 * A project's count is read at most once a second, and only while segments wait behind the queue's cursor (otherwise
 * each resync recorded is applied within a pass and none waits long).
 */
export class ChangesLimit {
  private readonly counted = new Map<string, { count: number; atMs: number }>();

  constructor(private readonly options: ChangesLimitOptions) {}

  /** Throws QueueBehindError (429, nothing written) while the project's waiting changes reach the limit. */
  async admit(projectId: string): Promise<void> {
    const { max } = this.options;
    if (max === Infinity) return;
    const waiting = await this.waiting(projectId);
    if (waiting < max) return;
    throw new QueueBehindError(
      `players: ${waiting} changed players of the project wait for the event queue (PLAYER_CHANGES_MAX ${max}); ` +
        `nothing was written, retry after ${RETRY_AFTER_SECONDS} s`,
      RETRY_AFTER_SECONDS,
    );
  }

  private async waiting(projectId: string): Promise<number> {
    const nowMs = this.options.clock.now().getTime();
    const known = this.counted.get(projectId);
    if (known && nowMs - known.atMs < COUNT_REUSE_MS) return known.count;
    const count = (await this.options.queueBehind()) ? (await this.options.changes.waiting(projectId)).length : 0;
    this.counted.set(projectId, { count, atMs: nowMs });
    return count;
  }
}
