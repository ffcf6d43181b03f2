import type { PlayerChangeStore } from "../players/player-change-store.js";
import type { PlayerDirectory } from "./player-directory.js";
import type { QueueWriter } from "./queue-writer.js";

const CHECK_EVERY_MS = 60_000;
/**
 * A recorded change this old whose resync is not applied lost it (the
 * database failed between the round's writes and the queuing, or the process
 * stopped there), or the queue is this far behind. No round runs this long:
 * its lock waits and writes are bounded by database deadlines.
 */
const UNSETTLED_GRACE_MS = 5 * 60_000;

/**
 * The repair of event histories as the membership repair is of tag members:
 * at the worker's first pass and every minute after, each player change
 * recorded long ago and never settled is queued again (a resync is
 * idempotent), so a history move lost between a round's writes and its
 * queuing is made anyway. Charts count the change as of now meanwhile.
 */
export class ChangeRepair {
  private lastCheck = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly options: { changes: PlayerChangeStore; directory: PlayerDirectory; writer: QueueWriter },
  ) {}

  /** The worker calls it between segments, holding the lease. */
  async checkIfDue(now: Date): Promise<void> {
    if (now.getTime() - this.lastCheck < CHECK_EVERY_MS) return;
    this.lastCheck = now.getTime();
    const { changes, directory, writer } = this.options;
    for (const { projectId, change } of await changes.olderThan(new Date(now.getTime() - UNSETTLED_GRACE_MS))) {
      // A fold is recorded before its round writes: one whose round failed never happened and must not be made.
      const targets = await directory.foldTargets(
        projectId,
        change.folds.map((fold) => fold.from),
      );
      const folds = change.folds.filter((fold) => targets.get(fold.from) === fold.into);
      const work = { kind: "resync" as const, identityKeys: change.identityKeys, folds, change: change.id };
      await writer.enqueue(projectId, work, 0, new Date(0));
      await changes.requeued(projectId, change.id, now);
    }
  }
}
