import type { DocumentChange } from "./absorb.js";
import { HistoryWriteFailed, type PendingSelection } from "./history-write-behind.js";
import type { PlanStore } from "./plan-store.js";
import type { PlayerRollupStore } from "./player-rollup-store.js";
import type { QueueStateStore } from "./queue-state-store.js";
import type { SetAsideProjects } from "./set-aside.js";

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
  private lastAdvanced = 0;
  /** What the cursor records as written. */
  private writtenMarked = 0;
  /** Plans through this segment are deleted. */
  private plansDeletedThrough = 0;
  /** Passes in a row that found nothing to apply. */
  private idlePasses = 0;

  constructor(private readonly options: WriteBehindScheduleOptions) {}

  /** Once a start: the history changes of the segments a previous worker applied and had not written, from their plans. */
  async catchUp(): Promise<void> {
    if (this.caughtUp) return;
    const { queue, plans, playerRollups } = this.options;
    const state = await queue.read();
    const segments: { seq: number; changes: DocumentChange[] }[] = [];
    for (let seq = state.written + 1; seq <= state.applied; seq++) {
      const plan = await plans.find(seq);
      if (plan) segments.push({ seq, changes: plan.players });
    }
    if (segments.length > 0) await playerRollups.writeAgain(segments);
    if (state.written < state.applied) await queue.markWritten(state.applied);
    this.writtenMarked = this.lastAdvanced = state.applied;
    // The last worker deleted plans a batch at a time: those of its last, unfinished batch are deleted again.
    this.plansDeletedThrough = Math.max(0, state.written - PLANS_KEPT - PLANS_DELETED_AT_ONCE);
    this.caughtUp = true;
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
