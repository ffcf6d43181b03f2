import { randomUUID } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import type { Clock } from "../clock.js";
import { planSegment, type PlanningDeps } from "./apply.js";
import type { ChangeRepair } from "./change-repair.js";
import { rebuildCohortsIfLegacy } from "./cohort-rebuild.js";
import type { CohortRollupStore } from "./cohort-rollup-store.js";
import type { PlayerChangeStore } from "./player-change-store.js";
import type { PlanStore } from "./plan-store.js";
import type { QueueState, QueueStateStore } from "./queue-state-store.js";
import type { Retention } from "./retention.js";
import { sideBySide } from "../db/side-by-side.js";
import type { Segment, SegmentHead, SegmentStore } from "./segment-store.js";
import { SetAsideProjects } from "./set-aside.js";

/** Plans of this many applied segments are kept (see apply()). */
const PLANS_KEPT = 64;
/** Segments past a set-aside project's head that the worker looks through for other projects' work. */
const LOOKAHEAD = 256;
/** Players a backfill resyncs per segment. */
const BACKFILL_SLICE = 500;

export interface WorkerOptions extends PlanningDeps {
  queue: QueueStateStore;
  segments: SegmentStore;
  plans: PlanStore;
  cohortRollups: CohortRollupStore;
  /** Player changes recorded for the charts: a resync carrying one settles it. */
  changes: PlayerChangeStore;
  changeRepair: ChangeRepair;
  retention: Retention;
  clock: Clock;
  /** How long the lease on the queue lasts without renewal; another worker takes over after that. */
  leaseMs?: number;
  /** How often an idle worker looks for work (an ingest in this process wakes it at once). */
  pollMs?: number;
  /** A sequence number reserved but never written for this long was given up by its writer. */
  gapGraceMs?: number;
  onError?: (error: unknown) => void;
  /** Legacy cohort counts were rebuilt from the players' histories. */
  onRebuilt?: () => void;
}

export interface Lag {
  /** Age of the oldest accepted event behind the apply cursor; 0 when none waits. */
  seconds: number;
  /** Events in the segments behind the apply cursor. */
  depth: number;
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
  private readonly owner = randomUUID();
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly gapGraceMs: number;
  private readonly stopping = new AbortController();
  private wakeUp: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private gap: { seq: number; since: number } | undefined;
  private measuring: Promise<Lag> | undefined;
  /** The heads of segments behind the cursor, read once each (a segment is large; its head never changes). */
  private readonly heads = new Map<number, SegmentHead>();
  private readonly setAside = new SetAsideProjects();
  /** The cohort counts are in the current layout (checked once a start). */
  private cohortsCurrent = false;

  constructor(private readonly options: WorkerOptions) {
    this.leaseMs = options.leaseMs ?? 10_000;
    this.pollMs = options.pollMs ?? 250;
    this.gapGraceMs = options.gapGraceMs ?? 30_000;
    options.writer.onQueued(() => this.wake());
  }

  start(): void {
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    this.wakeUp?.();
    await this.running;
    await this.options.queue.releaseLease(this.owner).catch(() => undefined);
  }

  /** New work was queued in this process. */
  private wake(): void {
    this.wakeUp?.();
  }

  /**
   * Measures the lag now from the segments waiting behind the cursor and not
   * applied ahead of it (a sequence number whose writer died holds no events;
   * one not written yet holds none so far). Each segment's head is read once: segments never change.
   * Calls made while a measurement runs share it (a /metrics scrape asks three gauges at once).
   */
  measureLag(): Promise<Lag> {
    this.measuring ??= this.measure().finally(() => (this.measuring = undefined));
    return this.measuring;
  }

  private async measure(): Promise<Lag> {
    const state = await this.options.queue.read();
    // A segment applied ahead of the cursor waits no more: its events are counted already.
    const waiting = (await this.waitingHeads(state.applied, state.reserved)).filter(
      (head) => head.count > 0 && !state.ahead.has(head.seq),
    );
    const oldest = waiting.reduce((min, head) => Math.min(min, head.receivedAt.getTime()), Infinity);
    const seconds = waiting.length === 0 ? 0 : Math.max(0, (this.options.clock.now().getTime() - oldest) / 1000);
    return { seconds, depth: waiting.reduce((sum, head) => sum + head.count, 0) };
  }

  private async waitingHeads(applied: number, reserved: number): Promise<SegmentHead[]> {
    for (const seq of this.heads.keys()) if (seq <= applied) this.heads.delete(seq);
    const unread: number[] = [];
    for (let seq = applied + 1; seq <= reserved; seq++) if (!this.heads.has(seq)) unread.push(seq);
    for (const head of await sideBySide(unread, (seq) => this.options.segments.head(seq))) {
      if (head) this.heads.set(head.seq, head);
    }
    return [...this.heads.values()].filter((head) => head.seq <= reserved);
  }

  private async loop(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      let worked = false;
      try {
        worked = await this.pass();
      } catch (error) {
        this.options.onError?.(error);
      }
      if (!worked) await this.idle();
    }
  }

  /** One step of work: applies the next segment if this worker holds the lease. True when it applied one. */
  private async pass(): Promise<boolean> {
    const { queue, segments, clock } = this.options;
    const now = clock.now();
    if (!(await queue.takeLease(this.owner, now, new Date(now.getTime() + this.leaseMs)))) return false;
    await this.options.retention.sweepIfDue(now);
    await this.options.changeRepair.checkIfDue(now);
    const state = await queue.read();
    const seq = state.applied + 1;
    await this.upgradeCohorts(seq);
    if (seq > state.reserved) return false;
    const segment = await segments.find(seq);
    if (!segment) return this.closeGap(seq, now);
    this.gap = undefined;
    if (state.ahead.has(seq)) {
      await this.advance(seq, segment.count);
      return true;
    }
    if (segment.projectId !== null && this.setAside.waits(segment.projectId, now.getTime())) {
      return this.applyAhead(seq, state, segment.projectId, now);
    }
    if (!(await this.tryApply(seq, segment, now))) return false;
    await this.advance(seq, segment.count);
    return true;
  }

  /**
   * Applies `segment`; on failure its project is set aside with backoff and
   * the failure reported, and the worker goes on with other projects'.
   */
  private async tryApply(seq: number, segment: Segment, now: Date): Promise<boolean> {
    try {
      await this.apply(seq, segment);
    } catch (error) {
      if (segment.projectId === null) throw error;
      this.setAside.failed(segment.projectId, now.getTime());
      this.options.onError?.(error);
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
        await this.options.queue.markAhead(next);
        return true;
      }
      held.add(head.projectId);
    }
    return false;
  }

  /** Rebuilds legacy cohort counts once, before `seq` is applied: never while a segment is half-written. */
  private async upgradeCohorts(seq: number): Promise<void> {
    if (this.cohortsCurrent || (await this.options.plans.find(seq))) return;
    const { playerRollups, cohortRollups, names, onRebuilt } = this.options;
    if (await rebuildCohortsIfLegacy(playerRollups, cohortRollups, names, seq - 1)) onRebuilt?.();
    this.cohortsCurrent = true;
  }

  /** Writes segment `seq`; the caller moves the cursor past it, or marks it applied ahead. */
  private async apply(seq: number, segment: Segment): Promise<void> {
    const { queue, plans, playerRollups, cohortRollups, retention, clock } = this.options;
    let plan = await plans.find(seq);
    let fresh = false;
    if (!plan) {
      const settled = await plans.settle(
        seq,
        await planSegment(segment, retention.firstDay(clock.now()), this.options),
      );
      // A plan decided after another worker finished this segment (and deleted its plan) is stale: drop it.
      if (settled.mine && (await queue.read()).applied >= seq) {
        await plans.delete(seq);
        return;
      }
      plan = settled.plan;
      fresh = settled.mine;
    }
    const absorbing = { fresh };
    await playerRollups.absorb(seq, plan.players, absorbing);
    await cohortRollups.absorb(seq, plan.cohorts, absorbing);
    if (plan.backfill) await this.backfill(segment.projectId!, seq, plan.backfill);
    if (segment.work?.kind === "resync" && segment.work.change) {
      await this.options.changes.settle(segment.projectId!, segment.work.change);
    }
  }

  private async advance(seq: number, events: number): Promise<void> {
    await this.options.queue.advance(seq, events);
    // Kept a while: a worker that stalled past its lease finds the plan still there and cannot store a stale one.
    await this.options.plans.delete(seq - PLANS_KEPT);
  }

  /**
   * Queues resyncs of a key's holders (planned with the key materialised),
   * then marks the key ready from the last of them. Run again after a crash,
   * it queues them again: a resync is idempotent.
   */
  private async backfill(projectId: string, seq: number, { key, holders }: { key: string; holders: string[] }) {
    let last = seq;
    for (let from = 0; from < holders.length; from += BACKFILL_SLICE) {
      const identityKeys = holders.slice(from, from + BACKFILL_SLICE);
      last = await this.options.writer.enqueue(projectId, { kind: "resync", identityKeys }, 0, new Date(0));
    }
    await this.options.traitKeys.ready(projectId, key, last);
  }

  /** A sequence number reserved but not written: wait for its writer, then give it up with a tombstone. */
  private async closeGap(seq: number, now: Date): Promise<boolean> {
    if (this.gap?.seq !== seq) this.gap = { seq, since: now.getTime() };
    if (now.getTime() - this.gap.since < this.gapGraceMs) return false;
    // Whether the tombstone or the late segment won the sequence number, it is there now.
    await this.options.segments.insertTombstone(seq, now);
    return true;
  }

  private async idle(): Promise<void> {
    const woken = new Promise<void>((resolve) => (this.wakeUp = resolve));
    await Promise.race([woken, delay(this.pollMs, undefined, { signal: this.stopping.signal }).catch(() => undefined)]);
    this.wakeUp = undefined;
  }
}
