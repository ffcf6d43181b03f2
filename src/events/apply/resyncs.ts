import type { ChangedPlayers } from "../../players/changed-players.js";
import { playerChange, type HistoryFollower, type WrittenProfile } from "../../players/rounds/written-profiles.js";
import type { PlayerDirectory } from "../player-directory.js";
import type { QueueWriter } from "../queue/queue.js";

const REPAIR_EVERY_MS = 60_000;
/**
 * A changed player recorded this long ago whose resync is not applied lost it (the database failed between the
 * round's writes and the queuing, or the process stopped there), or the queue is this far behind. No round runs
 * this long: its lock waits and writes are bounded by database deadlines.
 */
const UNSETTLED_GRACE_MS = 5 * 60_000;
/** Players a queued-again resync carries (as a backfill's). */
const RESYNC_SLICE = 500;

/**
 * How event histories follow the record of changed players: a resync segment, queued in order with the events after
 * each round's profiles and membership (the players write path's HistoryFollower), and queued again by the repair
 * for a change left unsettled; applying it moves the players' histories to their cohorts now and settles the record.
 * It needs only the queue to be built, so it exists before the players (src/server/calls/capabilities.ts).
 */
export class Resyncs implements HistoryFollower {
  private lastRepair = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: { writer: QueueWriter }) {}

  /**
   * After each round of profile writes (updates, and the folds of verifies and linked devices) and its membership:
   * the written players' histories follow their tags and traits as of now, and a folded profile's history moves to
   * the player it was folded into. One segment, settling the players recorded under `recorded` once applied.
   * Idempotent.
   */
  async queue(projectId: string, written: readonly WrittenProfile[], recorded: string | null): Promise<void> {
    if (written.length === 0) return;
    const { identityKeys, folds } = playerChange(written, []);
    const work = { kind: "resync" as const, identityKeys, folds, ...(recorded && { change: recorded }) };
    await this.options.writer.enqueue(projectId, work, 0, new Date(0));
  }

  async erase(projectId: string, identityKeys: readonly string[]): Promise<number> {
    const work = { kind: "resync" as const, identityKeys: [], erased: [...identityKeys] };
    return this.options.writer.enqueue(projectId, work, 0, new Date(0));
  }

  /**
   * The repair, as the membership repair is of tag members: at the worker's first pass and every minute after
   * (between segments, holding the lease), each changed player recorded long ago and never settled is queued again
   * under a new stamp (a resync is idempotent), so a history move lost between a round's writes and its queuing is
   * made anyway. Charts count the player as of now meanwhile.
   */
  async repairIfDue(
    now: Date,
    { changes, directory }: { changes: ChangedPlayers; directory: Pick<PlayerDirectory, "foldTargets"> },
  ) {
    if (now.getTime() - this.lastRepair < REPAIR_EVERY_MS) return;
    this.lastRepair = now.getTime();
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
        const work = { kind: "resync" as const, identityKeys, folds, change: stamp };
        await this.options.writer.enqueue(projectId, work, 0, new Date(0));
      }
    }
  }
}
