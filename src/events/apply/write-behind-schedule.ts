import { projectOfId } from "../../db/ids.js";
import { sideBySide } from "../../db/gate.js";
import type { PendingSelection } from "../../db/owner-memory.js";
import { HistoryWriteFailed } from "../rollups/player-rollup.js";
import type { PlanStore } from "../rollups/plan-store.js";
import type { PlayerRollupStore } from "../rollups/player-rollup-store.js";
import type { QueueStateStore } from "../queue/queue.js";
import type { SetAsideProjects } from "../queue/set-aside.js";

/** Plans of this many applied segments are kept: a worker that stalled past its lease cannot store a stale one. */
const PLANS_KEPT = 64;
/** Plans no longer needed are deleted this many at once: one command (STATEMENTS_PER_COMMAND on the embedded engine). */
const PLANS_DELETED_AT_ONCE = 25;
/**
 * Passes in a row that find the queue empty before everything waiting is written: a worker keeping up with steady
 * ingestion finds it empty between most segments, and writing then would undo the merging of changes.
 */
const QUIET_PASSES = 4;
/**
 * History changes wait in the owner's memory this long, then the oldest are written a slice at a time whenever the
 * worker finds the queue empty: the writes fill the worker's spare time and merge a minute of each player's changes.
 */
const WRITE_BEHIND_MS = 60_000;
/**
 * A worker that never finds the queue empty writes a slice after each segment once a change waited this long, or
 * this many documents have one.
 */
const WRITE_BEHIND_LATEST_MS = 120_000;
const WRITE_BEHIND_DOCUMENTS = 50_000;
const WRITE_SLICE = 500;
/**
 * Applied segments whose history changes a start writes again in one step, from their plans: a step is one pass of
 * the worker, so however far the writes lagged before a crash (or a stop's deadline), no pass reads or writes more.
 */
export const CATCH_UP_SEGMENTS = 16;

export interface WriteBehindScheduleOptions {
  queue: QueueStateStore;
  plans: PlanStore;
  playerRollups: PlayerRollupStore;
  /** The apply worker's: a project whose write fails waits as one whose apply fails. */
  setAside: SetAsideProjects;
  onError?: (error: unknown) => void;
}

/**
 * When the player history changes the owner keeps in memory (PlayerRollupStore.absorb) are written, and what the
 * queue's cursor records of it: every segment through `written` has its history changes in the database, so a
 * worker taking over after a crash writes again only the segments after it, from their plans, which are kept until
 * then. Where nothing is kept (MongoDB), `written` is the cursor itself.
 */
export class WriteBehindSchedule {
  /** The changes a previous worker left unwritten are written (once a start). */
  private caughtUp = false;
  /** The projects whose histories the catch-up wrote again (and the owner's memory forgot). */
  private readonly rewritten = new Set<string>();
  /** What the cursor recorded as written when this worker first read it. */
  private writtenAtStart: number | undefined;
  private lastAdvanced = 0;
  /** What the cursor records as written. */
  private writtenMarked = 0;
  /** Plans through this segment are deleted. */
  private plansDeletedThrough = 0;
  /** Passes in a row that found nothing to apply. */
  private idlePasses = 0;

  constructor(private readonly options: WriteBehindScheduleOptions) {}

  /**
   * At a start, a step of writing again the history changes of the segments a previous worker applied and had not
   * written, from their plans, CATCH_UP_SEGMENTS at a time; true while steps remain. The worker applies nothing until
   * they are done: a segment applied first would put a newer mark on a history than the changes still to write.
   * Then each project it wrote fills the owner's memory again, one a step, by one scan.
   */
  async catchUp(): Promise<boolean> {
    if (this.caughtUp) return false;
    const { queue, plans, playerRollups } = this.options;
    const state = await queue.read();
    // The last worker deleted plans a batch at a time: those of its last, unfinished batch are deleted again.
    this.writtenAtStart ??= state.written;
    this.plansDeletedThrough = Math.max(0, this.writtenAtStart - PLANS_KEPT - PLANS_DELETED_AT_ONCE);
    const through = Math.min(state.applied, state.written + CATCH_UP_SEGMENTS);
    const seqs = Array.from({ length: through - state.written }, (_, i) => state.written + 1 + i);
    const found = await sideBySide(seqs, (seq) => plans.find(seq));
    const segments = seqs.flatMap((seq, i) => (found[i] ? [{ seq, changes: found[i].players }] : []));
    if (segments.length > 0) await playerRollups.writeAgain(segments);
    for (const { changes } of segments) for (const { id } of changes) this.rewritten.add(projectOfId(id));
    if (state.written < through) await queue.markWritten(through);
    if (through < state.applied) return true;
    // Written, with this worker the only one (it holds the queue's lease): the owner's memory holds those projects'
    // histories whole again before the instance is ready (the start's fill may have seen a previous owner mid-write).
    const [projectId] = this.rewritten;
    if (projectId !== undefined) {
      await playerRollups.fillMemory(projectId);
      this.rewritten.delete(projectId);
      return true;
    }
    this.writtenMarked = this.lastAdvanced = state.applied;
    this.caughtUp = true;
    return false;
  }

  /** What the cursor moving to `seq` records as written. */
  writtenThrough(seq: number): number {
    const unwritten = this.options.playerRollups.firstUnwritten;
    return unwritten === undefined ? seq : unwritten - 1;
  }

  /** The cursor moved to `seq`, recording `written`: plans no longer needed go, and what waits is written when due. */
  async advanced(seq: number, written: number, now: Date): Promise<void> {
    this.lastAdvanced = seq;
    this.writtenMarked = written;
    this.idlePasses = 0;
    const through = Math.min(seq - PLANS_KEPT, written);
    const deletable = through - this.plansDeletedThrough;
    if (deletable >= PLANS_DELETED_AT_ONCE) {
      const from = this.plansDeletedThrough + 1;
      await this.options.plans.deleteAll(Array.from({ length: deletable }, (_, i) => from + i));
      this.plansDeletedThrough = through;
    }
    await this.writeDue(now, WRITE_BEHIND_LATEST_MS);
  }

  /**
   * The worker found nothing to apply: a slice of what is due is written, and everything once the queue stays empty.
   * True when it wrote a slice (the worker looks for work again at once).
   */
  async idle(now: Date): Promise<boolean> {
    if (await this.writeDue(now, WRITE_BEHIND_MS)) return true;
    this.idlePasses += 1;
    if (this.idlePasses >= QUIET_PASSES) await this.writeWaiting(now);
    return false;
  }

  /**
   * A stop: what waits is written a slice at a time, oldest first, while `deadline` (ms since the epoch) is ahead;
   * the rest stays for the next start's catchUp, from the plans kept for it.
   */
  async writeBefore(deadline: number, now: Date): Promise<void> {
    const { playerRollups } = this.options;
    while (playerRollups.unwritten > 0 && Date.now() < deadline) {
      const before = playerRollups.unwritten;
      await this.writeWaiting(now, { limit: WRITE_SLICE });
      if (playerRollups.unwritten >= before) return; // only a set-aside project's wait
    }
  }

  /**
   * Writes a slice of the oldest changes once one waited `waitedMs`, or too many documents wait; true when it wrote
   * any (a set-aside project's wait).
   */
  private async writeDue(now: Date, waitedMs: number): Promise<boolean> {
    const { unwritten, oldestUnwrittenAt = Infinity } = this.options.playerRollups;
    const aged = now.getTime() - waitedMs;
    if (oldestUnwrittenAt > aged && unwritten <= WRITE_BEHIND_DOCUMENTS) return false;
    await this.writeWaiting(now, {
      addedBefore: unwritten > WRITE_BEHIND_DOCUMENTS ? Infinity : aged,
      limit: WRITE_SLICE,
    });
    return this.options.playerRollups.unwritten < unwritten;
  }

  /**
   * Writes what waits (what `selection` picks; all by default) but a set-aside project's, and records
   * it on the cursor. A project whose write fails is set aside, and reported.
   */
  async writeWaiting(now: Date, selection: Omit<PendingSelection, "among"> = {}): Promise<void> {
    const { queue, playerRollups, setAside } = this.options;
    if (playerRollups.firstUnwritten === undefined) return;
    try {
      await playerRollups.writeBehind({
        ...selection,
        among: (projectId) => !setAside.waits(projectId, now.getTime()),
      });
    } catch (error) {
      if (!(error instanceof HistoryWriteFailed)) throw error;
      for (const projectId of error.projectIds) setAside.failed(projectId, now.getTime());
      this.options.onError?.(error);
    }
    const written = this.writtenThrough(this.lastAdvanced);
    if (written > this.writtenMarked) await queue.markWritten(written);
    this.writtenMarked = Math.max(this.writtenMarked, written);
  }
}
