import { sideBySide } from "../db/side-by-side.js";
import type { DocumentChange } from "./absorb.js";
import { HistoryWriteFailed, type PendingSelection } from "./history-write-behind.js";
import type { PlanStore } from "./plan-store.js";
import type { PlayerRollupStore } from "./player-rollup-store.js";
import type { QueueStateStore } from "./queue-state-store.js";
import type { SetAsideProjects } from "./set-aside.js";

/** Plans of this many applied segments are kept: a worker that stalled past its lease cannot store a stale one. */
const PLANS_KEPT = 64;
/**
 * History changes wait in the owner's memory this long, or until this many documents have one; then the oldest are
 * written a slice a segment, so that writing them never holds the worker up for long.
 */
const WRITE_BEHIND_MS = 60_000;
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
  private plansDeletedThrough: number | undefined;

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
    this.plansDeletedThrough = state.written - PLANS_KEPT;
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
    const through = Math.min(seq - PLANS_KEPT, written);
    const from = Math.max(1, (this.plansDeletedThrough ?? through - 1) + 1);
    const deleting = Array.from({ length: Math.max(0, through - from + 1) }, (_, i) => from + i);
    await sideBySide(deleting, (old) => this.options.plans.delete(old));
    this.plansDeletedThrough = Math.max(this.plansDeletedThrough ?? through, through);
    const { unwritten, oldestUnwrittenAt = Infinity } = this.options.playerRollups;
    const aged = now.getTime() - WRITE_BEHIND_MS;
    if (oldestUnwrittenAt <= aged || unwritten > WRITE_BEHIND_DOCUMENTS) {
      await this.writeWaiting(now, {
        addedBefore: unwritten > WRITE_BEHIND_DOCUMENTS ? Infinity : aged,
        limit: WRITE_SLICE,
      });
    }
  }

  /**
   * Writes what waits (what `selection` picks; all when the worker is idle) but a set-aside project's, and records
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
