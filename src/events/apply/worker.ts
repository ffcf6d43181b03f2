import { randomUUID } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { settledBy } from "../../deadline.js";
import { notTimed, stepsOf, type Step, type StepTimer } from "../../steps.js";
import type { QueueState } from "../queue/queue-store.js";
import { projectStep, type HeldQueue, type ProjectStepDeps } from "./project-step.js";
import type { Retention } from "./retention.js";
import { ownerOf, type WorkerRegistry } from "./workers.js";

/** How often a caller waiting for a segment to be applied looks at its queue. */
const APPLIED_POLL_MS = 20;
/** After this many passes in a row found nothing to do, an idle worker looks QUIET_POLL_FACTOR times less often. */
const QUIET_AFTER_PASSES = 8;
const QUIET_POLL_FACTOR = 4;
/** The first wait before a failing project's queue is tried again; it doubles on each failure up to MAX. */
const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 30_000;
/** A sequence number reserved and not written for this long was given up by its writer. */
const GAP_GRACE_MS = 30_000;

export interface WorkerOptions extends ProjectStepDeps {
  retention: Retention;
  workers: WorkerRegistry;
  steps?: StepTimer;
  /** How long a lease on a project's queue lasts without renewal; renewed on a timer three times within it. */
  leaseMs?: number;
  /** How often an idle worker looks for work (an ingest in this process wakes it at once). */
  pollMs?: number;
  /** A sequence number reserved but never written for this long was given up by its writer (a tombstone closes it). */
  gapGraceMs?: number;
  /** Failures in a row after which a segment is parked (EVENT_PARK_AFTER_FAILURES). */
  parkAfter: number;
  onError?: (error: unknown) => void;
}

/**
 * Applies the projects' queues, each one's segments in order, while it holds that project's lease: the projects are
 * shared among the live workers (workers.ts), each lease renewed on a timer and fenced by its epoch (every write of
 * the cursor names it). A project whose segment fails backs off alone; after `parkAfter` failures in a row the
 * segment is parked (set aside with its error) and its queue goes on.
 */
export class ApplyWorker {
  private readonly id = randomUUID();
  private readonly step: Step;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly held = new Map<string, { epoch: number }>();
  private readonly backoff = new Map<string, { untilMs: number; ms: number }>();
  private readonly gaps = new Map<string, { seq: number; sinceMs: number }>();
  private readonly stopping = new AbortController();
  private wakeUp: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private renewal: NodeJS.Timeout | undefined;

  constructor(private readonly options: WorkerOptions) {
    this.step = stepsOf("apply", options.steps ?? notTimed);
    this.leaseMs = options.leaseMs ?? 10_000;
    this.pollMs = options.pollMs ?? 250;
    options.writer.onQueued(() => this.wakeUp?.());
  }

  start(): void {
    this.renewal ??= setInterval(() => void this.renewLeases().catch((e: unknown) => this.report(e)), this.leaseMs / 3);
    this.running ??= this.loop();
  }

  /** Stops after the pass under way (within `graceMs`), then lets its leases go. */
  async stop(graceMs = Infinity): Promise<void> {
    const deadline = Date.now() + graceMs;
    this.stopping.abort();
    this.wakeUp?.();
    clearInterval(this.renewal);
    if (!(await settledBy(this.running ?? Promise.resolve(), deadline))) return;
    const letGo = Promise.all([
      ...[...this.held].map(([projectId, { epoch }]) => this.options.queue.releaseLease(projectId, this.id, epoch)),
      this.options.workers.leave(this.id),
    ]);
    await settledBy(
      letGo.catch(() => undefined),
      deadline,
    );
  }

  /** Resolves once segment `seq` of the project is applied (or carried out ahead), by any worker. */
  async applied(projectId: string, seq: number, signal?: AbortSignal): Promise<void> {
    for (;;) {
      const { applied, ahead } = await this.options.queue.read(projectId);
      if (applied >= seq || ahead.has(seq)) return;
      await delay(APPLIED_POLL_MS, undefined, { signal });
    }
  }

  /** Resolves once sum `id`'s back-fill is written in full (or the sum was turned off meanwhile). */
  async sumWritten(projectId: string, id: string, signal?: AbortSignal): Promise<void> {
    while ((await this.options.summed.list(projectId)).some((pair) => pair.id === id && !pair.ready)) {
      await delay(APPLIED_POLL_MS, undefined, { signal });
    }
  }

  private report(error: unknown): void {
    if (!this.stopping.signal.aborted) this.options.onError?.(error);
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

  /** One step of each project this worker is owed whose queue has work; true when any did some. */
  private async pass(): Promise<boolean> {
    const { queue, workers, retention, clock } = this.options;
    const now = clock.now();
    const alive = await workers.heartbeat(this.id, now, new Date(now.getTime() + this.leaseMs));
    const states = await queue.readAll();
    const mine = states.filter((state) => ownerOf(state.projectId, alive) === this.id);
    for (const projectId of this.held.keys()) {
      if (mine.some((state) => state.projectId === projectId)) continue;
      const { epoch } = this.held.get(projectId)!;
      this.held.delete(projectId);
      await queue.releaseLease(projectId, this.id, epoch);
    }
    let worked = await retention.sweepIdsIfDue(now);
    for (const state of mine) {
      if (this.stopping.signal.aborted) break;
      if ((this.backoff.get(state.projectId)?.untilMs ?? 0) > now.getTime()) continue;
      worked = (await this.work(state, now)) || worked;
    }
    return worked;
  }

  /** A step of one project's queue under its lease; a failure backs the project off, or parks the segment. */
  private async work(state: QueueState, now: Date): Promise<boolean> {
    const hasWork = state.reserved > state.applied;
    const { retention, queue } = this.options;
    const lease = await this.lease(state.projectId, now, hasWork);
    if (!lease) return false;
    try {
      const outcome = await projectStep(this.options, this.step, await this.heldQueue(state, lease.epoch));
      this.backoff.delete(state.projectId);
      if (outcome === "gap") return this.closeGap(state, now);
      this.gaps.delete(state.projectId);
      return outcome === "done" || (await retention.sweepIfDue(state.projectId, now));
    } catch (error) {
      this.report(error);
      const seq = state.applied + 1;
      const count = await queue.failed(state.projectId, seq, lease.epoch).catch(() => 0);
      if (count >= this.options.parkAfter && !state.controls.includes(seq)) {
        const segment = await this.options.segments.head(state.projectId, seq);
        await queue.park(state.projectId, seq, segment?.count ?? 0, String(error), now, lease.epoch);
        return true;
      }
      const ms = Math.min(MAX_BACKOFF_MS, 2 * (this.backoff.get(state.projectId)?.ms ?? FIRST_BACKOFF_MS / 2));
      this.backoff.set(state.projectId, { untilMs: now.getTime() + ms, ms });
      return false;
    }
  }

  /** The project's lease, taken when there is work (or a sweep to run) and not held yet. */
  private async lease(projectId: string, now: Date, hasWork: boolean) {
    const held = this.held.get(projectId);
    if (held) return held;
    if (!hasWork && !this.options.retention.due(projectId, now)) return null;
    const taken = await this.options.queue.takeLease(projectId, this.id, now, new Date(now.getTime() + this.leaseMs));
    if (!taken) return null;
    if (taken.resumed) this.options.summed.leaseLapsed(projectId);
    this.held.set(projectId, { epoch: taken.epoch });
    return this.held.get(projectId)!;
  }

  /** Renews every lease held (a timer: a long step keeps its lease); one another worker took is let go. */
  private async renewLeases(): Promise<void> {
    const now = this.options.clock.now();
    for (const [projectId, { epoch }] of this.held) {
      const taken = await this.options.queue.takeLease(projectId, this.id, now, new Date(now.getTime() + this.leaseMs));
      if (!taken || taken.epoch !== epoch) this.held.delete(projectId);
    }
  }

  private async heldQueue(state: QueueState, epoch: number): Promise<HeldQueue> {
    const erasedAt = new Map<string, number>();
    for (const seq of state.ahead) {
      const segment = await this.options.segments.find(state.projectId, seq);
      if (segment?.work?.kind === "erase") for (const key of segment.work.identityKeys) erasedAt.set(key, seq);
    }
    return { state, epoch, erasedAt };
  }

  /** A sequence number reserved but not written: wait for its writer, then give it up with a tombstone. */
  private async closeGap(state: QueueState, now: Date): Promise<boolean> {
    const seq = state.applied + 1;
    const gap = this.gaps.get(state.projectId);
    if (gap?.seq !== seq) this.gaps.set(state.projectId, { seq, sinceMs: now.getTime() });
    const graceMs = this.options.gapGraceMs ?? GAP_GRACE_MS;
    if (now.getTime() - this.gaps.get(state.projectId)!.sinceMs < graceMs) return false;
    // Whether the tombstone or the late segment won the sequence number, it is there now.
    await this.options.segments.insertTombstone(state.projectId, seq, now);
    return true;
  }

  private async idle(ms: number): Promise<void> {
    const woken = new Promise<void>((resolve) => (this.wakeUp = resolve));
    await Promise.race([woken, delay(ms, undefined, { signal: this.stopping.signal }).catch(() => undefined)]);
    this.wakeUp = undefined;
  }
}
