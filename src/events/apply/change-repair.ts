import type { ChangedPlayers } from "../../players/changed-players.js";
import type { PlayerDirectory } from "../player-directory.js";
import type { QueueWriter } from "../queue/queue-writer.js";

const CHECK_EVERY_MS = 60_000;
/**
 * A changed player recorded this long ago whose resync is not applied lost it
 * (the database failed between the round's writes and the queuing, or the
 * process stopped there), or the queue is this far behind. No round runs this
 * long: its lock waits and writes are bounded by database deadlines.
 */
const UNSETTLED_GRACE_MS = 5 * 60_000;
/** Players a queued-again resync carries (as a backfill's). */
const RESYNC_SLICE = 500;

/**
 * The repair of event histories as the membership repair is of tag members:
 * at the worker's first pass and every minute after, each changed player
 * recorded long ago and never settled is queued again under a new stamp (a
 * resync is idempotent), so a history move lost between a round's writes and
 * its queuing is made anyway. Charts count the player as of now meanwhile.
 */
export class ChangeRepair {
  private lastCheck = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: { changes: ChangedPlayers; directory: PlayerDirectory; writer: QueueWriter }) {}

  /** The worker calls it between segments, holding the lease. */
  async checkIfDue(now: Date): Promise<void> {
    if (now.getTime() - this.lastCheck < CHECK_EVERY_MS) return;
    this.lastCheck = now.getTime();
    const { changes, directory, writer } = this.options;
    for (const { projectId, players } of await changes.stale(new Date(now.getTime() - UNSETTLED_GRACE_MS))) {
      // A fold is recorded before its round writes: one whose round failed never happened and must not be made; its
      // source is resynced where it is (and so settled).
      const sources = players.flatMap((player) => (player.into === null ? [] : [player.identityKey]));
      const targets = sources.length > 0 ? await directory.foldTargets(projectId, sources) : new Map<string, string>();
      const stamp = await changes.restamp(projectId, players, now);
      for (let from = 0; from < players.length; from += RESYNC_SLICE) {
        const slice = players.slice(from, from + RESYNC_SLICE);
        const made = slice.filter((p) => p.into !== null && targets.get(p.identityKey) === p.into);
        const folds = made.map((p) => ({ from: p.identityKey, into: p.into! }));
        const identityKeys = slice.filter((p) => !made.includes(p)).map((p) => p.identityKey);
        await writer.enqueue(projectId, { kind: "resync", identityKeys, folds, change: stamp }, 0, new Date(0));
      }
    }
  }
}
