import { setTimeout as delay } from "node:timers/promises";
import { settledBy } from "../../deadline.js";
import { notTimed, stepsOf, type Step, type StepTimer } from "../../steps.js";
import { applySegment, type ApplyDeps } from "./apply.js";
import type { Resyncs } from "./resyncs.js";
import type { Retention } from "./retention.js";
import { QueueLease, type QueueState } from "../queue/queue.js";
import type { Segment } from "../queue/segment-store.js";
import { SetAsideProjects } from "../queue/set-aside.js";
import { WriteBehindSchedule } from "./write-behind-schedule.js";

/** Segments past a set-aside project's head that the worker looks through for other projects' work. */
const LOOKAHEAD = 256;
/** How often a caller waiting for a segment to be applied looks at the queue's cursor. */
const APPLIED_POLL_MS = 20;
/**
 * After this many passes in a row found nothing to do, an idle worker (or one standing by for the lease) looks
 * QUIET_POLL_FACTOR times less often: a quiet service sends fewer commands, and an ingest here still wakes it at once.
 */
const QUIET_AFTER_PASSES = 8;
const QUIET_POLL_FACTOR = 4;

export interface WorkerOptions extends ApplyDeps {
  /** Resyncs queued again for changes left unsettled (the repair). */
  resyncs: Resyncs;
  /** The window's hourly sweep, a step between segments. */
  retention: Retention;
  /** Where the apply's steps are timed (`platform_step_seconds{path="apply"}`). */
  steps?: StepTimer;
  /**
   * How long the lease on the queue lasts without renewal (renewed once half of it has run); another worker takes
   * over after that.
   */
  leaseMs?: number;
  /** How often an idle worker looks for work (an ingest in this process wakes it at once); quiet, less often. */
  pollMs?: number;
  /** A sequence number reserved but never written for this long was given up by its writer. */
  gapGraceMs?: number;
  onError?: (error: unknown) => void;
}

/**
 * Drains the event queue in sequence order, one segment at a time, while it
 * holds the queue's lease (one worker applies at a time; the others stand by
 * and take over when a lease runs out). Each segment's plan is stored before
 * it is written, and every rollup document absorbs a segment at most once
 * (absorb.ts), so a crash at any point, or two workers on one segment, apply
 * each event exactly once.
 */
export class ApplyWorker {
  private readonly lease: QueueLease;
  /** The apply's steps (applySegment), timed. */
  private readonly step: Step;
  /** Whether this worker's lease still runs: a plan it settles after that may be stale. */
  private readonly leaseHolds = () => this.lease.holds(this.options.clock.now());
  private readonly pollMs: number;
  private readonly gapGraceMs: number;
  private readonly stopping = new AbortController();
  private wakeUp: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private gap: { seq: number; since: number } | undefined;
  /** The stop's grace ran out with a pass under way: what fails in it from then on is the database closing under it. */
  private abandoned = false;
  /**
   * Whether a plan may be stored for a segment not applied in full: after the lease lapsed (another worker's) or an
   * apply of this one's stopped midway. Otherwise the worker plans without looking; should a plan be stored all the
   * same (a stalled worker's), settling answers it.
   */
  private planLeftBehind = true;
  private readonly setAside = new SetAsideProjects();
  private readonly histories: WriteBehindSchedule;
  /** Resolves once the history changes a previous worker left unwritten are in the database (or the worker stopped). */
  readonly caughtUp: Promise<void>;
  private markCaughtUp!: () => void;

  constructor(private readonly options: WorkerOptions) {
    this.lease = new QueueLease(options.queue, options.leaseMs ?? 10_000);
    this.step = stepsOf("apply", options.steps ?? notTimed);
    this.pollMs = options.pollMs ?? 250;
    this.gapGraceMs = options.gapGraceMs ?? 30_000;
    this.histories = new WriteBehindSchedule({
      ...options,
      setAside: this.setAside,
      onError: (error) => this.report(error),
    });
    options.writer.onQueued(() => this.wake());
    this.caughtUp = new Promise((resolve) => (this.markCaughtUp = resolve));
  }

  start(): void {
    this.running ??= this.loop();
  }

  /**
   * Stops after the pass under way, then writes the history changes waiting in memory a slice at a time, all within
   * `graceMs`. What is not written by then the next worker writes from the plans kept for it (catchUp), as after a
   * crash; a pass still running then ends with the process, as in a crash, and the lease lapses on its own.
   */
  async stop(graceMs = Infinity): Promise<void> {
    const deadline = Date.now() + graceMs;
    this.stopping.abort();
    this.wakeUp?.();
    this.markCaughtUp();
    if (!(await settledBy(this.running ?? Promise.resolve(), deadline))) {
      this.abandoned = true;
      return;
    }
    await this.histories.writeBefore(deadline, this.options.clock.now()).catch(() => undefined);
    await settledBy(
      this.lease.release().catch(() => undefined),
      deadline,
    );
  }

  /**
   * Reports a failure, but not that of a pass the stop cut short (the database closed under it): it ends as in a
   * crash, and the next worker redoes what it left.
   */
  private report(error: unknown): void {
    if (!this.abandoned) this.options.onError?.(error);
  }

  /** New work was queued in this process. */
  private wake(): void {
    this.wakeUp?.();
  }

  /** Resolves once segment `seq` is applied (by any worker), or rejects when `signal` aborts first. */
  async applied(seq: number, signal?: AbortSignal): Promise<void> {
    for (;;) {
      const { applied, ahead } = await this.options.queue.read();
      if (applied >= seq || ahead.has(seq)) return;
      await delay(APPLIED_POLL_MS, undefined, { signal });
    }
  }

  /**
   * Resolves once sum `id`'s back-fill is written in full, its steps queued one after another (or the sum was turned
   * off meanwhile); rejects when `signal` aborts first.
   */
  async sumWritten(projectId: string, id: string, signal?: AbortSignal): Promise<void> {
    while ((await this.options.summed.list(projectId)).some((pair) => pair.id === id && !pair.ready)) {
      await delay(APPLIED_POLL_MS, undefined, { signal });
    }
  }

  private async loop(): Promise<void> {
    let quietPasses = 0;
    while (!this.stopping.signal.aborted) {
      let worked = false;
      try {
        worked = await this.pass();
      } catch (error) {
        this.report(error);
      }
      quietPasses = worked ? 0 : quietPasses + 1;
      if (!worked) await this.idle(quietPasses > QUIET_AFTER_PASSES ? this.pollMs * QUIET_POLL_FACTOR : this.pollMs);
    }
  }

  /** One step of work: applies the next segment if this worker holds the lease. True when it applied one. */
  private async pass(): Promise<boolean> {
    const { queue, segments, clock } = this.options;
    const now = clock.now();
    const lease = await this.lease.take(now);
    if (lease === "refused") return false;
    if (lease === "resumed") {
      // Another worker may have applied meanwhile: what this one keeps may be missing its writes and plans.
      this.options.traitKeys.leaseLapsed();
      this.options.summed.leaseLapsed();
      this.planLeftBehind = true;
    }
    if (await this.histories.catchUp()) return true;
    this.markCaughtUp();
    await this.options.retention.sweepIfDue(now);
    await this.options.resyncs.repairIfDue(now, this.options);
    const state = await queue.read();
    const seq = state.applied + 1;
    if (seq > state.reserved) return this.histories.idle(now);
    const segment = await segments.find(seq);
    if (!segment) return (await this.histories.idle(now)) || this.closeGap(seq, now);
    this.gap = undefined;
    if (state.ahead.has(seq)) {
      await this.advance(seq, segment.count, now);
      return true;
    }
    if (segment.projectId !== null && this.setAside.waits(segment.projectId, now.getTime())) {
      return this.applyAhead(seq, state, segment.projectId, now);
    }
    if (!(await this.tryApply(seq, segment, now, { inOrder: true }))) return false;
    await this.advance(seq, segment.count, now);
    return true;
  }

  /**
   * Applies `segment`; on failure its project is set aside with backoff and
   * the failure reported, and the worker goes on with other projects'.
   */
  private async tryApply(seq: number, segment: Segment, now: Date, { inOrder = false } = {}): Promise<boolean> {
    try {
      const lookForPlan = this.planLeftBehind;
      this.planLeftBehind = true;
      const target = { seq, segment, inOrder, lookForPlan, leaseHolds: this.leaseHolds };
      this.planLeftBehind = !(await applySegment(this.options, this.step, target));
    } catch (error) {
      if (segment.projectId === null) throw error;
      this.setAside.failed(segment.projectId, now.getTime());
      this.report(error);
      return false;
    }
    if (segment.projectId !== null) this.setAside.succeeded(segment.projectId);
    return true;
  }

  /**
   * While the head of the queue belongs to a set-aside project, applies the
   * next segment after it of a project with nothing waiting before it (every
   * document is one project's, so projects' segments commute). The cursor
   * stays; such a segment is marked in the cursor's document once applied in
   * full (reads accept its histories; the cursor only advances past it).
   * It stops at a gap: the missing segment's project is unknown.
   */
  private async applyAhead(seq: number, state: QueueState, waiting: string, now: Date): Promise<boolean> {
    const held = new Set([waiting]);
    for (let next = seq + 1; next <= Math.min(state.reserved, seq + LOOKAHEAD); next++) {
      if (state.ahead.has(next)) continue;
      const head = await this.options.segments.head(next);
      if (!head) return false;
      if (head.projectId === null) continue;
      if (held.has(head.projectId) || this.setAside.waits(head.projectId, now.getTime())) {
        held.add(head.projectId);
        continue;
      }
      const segment = await this.options.segments.find(next);
      if (segment && (await this.tryApply(next, segment, now))) {
        await this.step("advance", () => this.options.queue.markAhead(next));
        return true;
      }
      held.add(head.projectId);
    }
    return false;
  }

  /** The cursor moved past segment `seq` (the apply's last step), and what the write-behind schedule keeps with it. */
  private advance(seq: number, events: number, now: Date): Promise<void> {
    return this.step("advance", async () => {
      const written = this.histories.writtenThrough(seq);
      await this.options.queue.advance(seq, events, written);
      await this.histories.advanced(seq, written, now);
    });
  }

  /** A sequence number reserved but not written: wait for its writer, then give it up with a tombstone. */
  private async closeGap(seq: number, now: Date): Promise<boolean> {
    if (this.gap?.seq !== seq) this.gap = { seq, since: now.getTime() };
    if (now.getTime() - this.gap.since < this.gapGraceMs) return false;
    // Whether the tombstone or the late segment won the sequence number, it is there now.
    await this.options.segments.insertTombstone(seq, now);
    return true;
  }

  private async idle(ms: number): Promise<void> {
    const woken = new Promise<void>((resolve) => (this.wakeUp = resolve));
    await Promise.race([woken, delay(ms, undefined, { signal: this.stopping.signal }).catch(() => undefined)]);
    this.wakeUp = undefined;
  }
}
