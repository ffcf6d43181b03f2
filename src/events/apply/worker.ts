import { randomUUID } from "node:crypto";
import { EventEmitter, once } from "node:events";
import { setTimeout as delay } from "node:timers/promises";
import { settledBy } from "../../deadline.js";
import { notTimed, stepsOf, type Step, type StepTimer } from "../../steps.js";
import type { QueueState } from "../queue/queue-store.js";
import {
  controlStep,
  heldQueue,
  LeaseLost,
  projectStep,
  SegmentFailure,
  type ProjectStepDeps,
} from "./project-step.js";
import type { ParkedStore } from "../queue/parked-store.js";
import { KeyedLock } from "../../db/keyed-lock.js";
import { UnavailableError } from "../../errors.js";
import type { Retention } from "./retention.js";
import { ProjectLeases } from "./project-leases.js";
import { QueueGaps } from "./queue-gaps.js";
import { aliveAt, ownerOf, type ListedWorker, type WorkerRegistry } from "./workers.js";

/** How often a caller waiting for a project's queue to move looks at it, unless this worker says it moved. */
const APPLIED_POLL_MS = 250;
/** How long a fold or an erasure waits for another instance's worker holding its project to carry it out. */
const CARRY_OUT_WAIT_MS = 30_000;
/** After this many passes in a row found nothing to do, an idle worker looks QUIET_POLL_FACTOR times less often. */
const QUIET_AFTER_PASSES = 8;
const QUIET_POLL_FACTOR = 4;
/** The first wait before a failing project's queue is tried again; it doubles on each failure up to MAX. */
const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 30_000;
/** Projects' steps a worker runs side by side at most (each holds a batch of up to 8,000 events). */
const STEPS_AT_ONCE = 8;

export interface WorkerOptions extends ProjectStepDeps {
  retention: Retention;
  workers: WorkerRegistry;
  steps?: StepTimer;
  /** How long a lease on a project's queue lasts without renewal; renewed on a timer three times within it. */
  leaseMs?: number;
  /** How often an idle worker looks for work (an ingest in this process wakes it at once). */
  pollMs?: number;
  /** Failures in a row after which a segment is parked (EVENT_PARK_AFTER_FAILURES), and where. */
  parkAfter: number;
  parked: ParkedStore;
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
  private readonly leases: ProjectLeases;
  private readonly backoff = new Map<string, { untilMs: number; ms: number }>();
  private readonly gaps: QueueGaps;
  /** Each project's step under way (one at a time a project), and when each last started. */
  private readonly stepping = new Map<string, Promise<boolean>>();
  private readonly started = new Map<string, number>();
  /** A project's work in this process, one at a time: the loop's steps and the folds and erasures carried out at once. */
  private readonly projects = new KeyedLock();
  private readonly stopping = new AbortController();
  private wakeUp: (() => void) | undefined;
  /** The workers as last listed, on the renewal timer (a third of a lease). */
  private listed: readonly ListedWorker[] | undefined;
  private running: Promise<void> | undefined;
  private renewal: NodeJS.Timeout | undefined;
  /** Told, by project, each time this worker moved a project's queue on: its callers waiting look again at once. */
  private readonly moved = new EventEmitter();

  constructor(private readonly options: WorkerOptions) {
    this.step = stepsOf("apply", options.steps ?? notTimed);
    this.leaseMs = options.leaseMs ?? 10_000;
    this.pollMs = options.pollMs ?? 250;
    this.gaps = new QueueGaps(options.segments);
    this.leases = new ProjectLeases(options.queue, this.id, this.leaseMs);
    options.writer.onQueued(() => this.wakeUp?.());
  }

  start(): void {
    this.renewal ??= setInterval(() => void this.renew().catch((e: unknown) => this.report(e)), this.leaseMs / 3);
    this.running ??= this.loop();
  }

  /** Stops after the pass and steps under way (within `graceMs`), then lets its leases go. */
  async stop(graceMs = Infinity): Promise<void> {
    const deadline = Date.now() + graceMs;
    this.stopping.abort();
    this.wakeUp?.();
    clearInterval(this.renewal);
    const running = Promise.all([this.running, ...this.stepping.values()]);
    if (!(await settledBy(running, deadline))) return;
    const letGo = Promise.all([this.leases.release(), this.options.workers.leave(this.id)]);
    await settledBy(
      letGo.catch(() => undefined),
      deadline,
    );
  }

  /**
   * Carries out the folds and erasures of a project queued through `seq` (one of them) now, in queue order, ahead of
   * the events before them: under this worker's lease on the project, or one taken for it (a worker off, or none on
   * the project yet); while another instance holds it, its worker does, and this waits for it.
   */
  async carryOut(projectId: string, seq: number): Promise<void> {
    const { queue, clock } = this.options;
    for (const deadline = Date.now() + CARRY_OUT_WAIT_MS; Date.now() < deadline; await this.movedOrPolled(projectId)) {
      const done = await this.projects.run([projectId], async () => {
        let state = await queue.read(projectId);
        if (state.applied >= seq || state.ahead.has(seq)) return true;
        const now = clock.now();
        const lease = await this.lease(projectId, now, true);
        if (!lease) return false;
        try {
          for (; state.applied < seq && !state.ahead.has(seq); state = await queue.read(projectId)) {
            if (!(await controlStep(this.options, this.step, { state, epoch: lease.epoch, erasedAt: new Map() })))
              break;
          }
        } catch (error) {
          if (!(error instanceof LeaseLost)) throw error;
          this.leases.lost(projectId);
          return false;
        }
        return state.applied >= seq || state.ahead.has(seq);
      });
      if (done) return;
    }
    throw new UnavailableError(
      "the project's event queue is held by a worker that did not carry the change out in time",
    );
  }

  /** Resolves once sum `id`'s back-fill is written in full (or the sum was turned off meanwhile), by any worker. */
  async sumWritten(projectId: string, id: string, signal?: AbortSignal): Promise<void> {
    // Just queued: nothing to see before the queue moves.
    do await this.movedOrPolled(projectId, signal);
    while ((await this.options.summed.list(projectId)).some((pair) => pair.id === id && !pair.ready));
  }

  /** This worker moved the project's queue on, or a poll's wait passed (another instance's worker may have). */
  private async movedOrPolled(projectId: string, signal?: AbortSignal): Promise<void> {
    const done = new AbortController();
    const both = signal ? AbortSignal.any([signal, done.signal]) : done.signal;
    try {
      await Promise.race([
        once(this.moved, projectId, { signal: both }),
        delay(APPLIED_POLL_MS, undefined, { signal: both }),
      ]);
    } finally {
      done.abort();
    }
    signal?.throwIfAborted();
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

  /**
   * A step of each project this worker is owed whose queue has work and has no step under way, side by side (the
   * least recently started first, STEPS_AT_ONCE at most); awaited a poll's time at most, so a long step holds up no
   * other project. True when any did some.
   */
  private async pass(): Promise<boolean> {
    const { queue, retention, clock } = this.options;
    const now = clock.now();
    this.listed ??= await this.heartbeat();
    const alive = aliveAt(this.listed, now, this.id);
    const states = await queue.readAll();
    const mine = states.filter((state) => ownerOf(state.projectId, alive) === this.id);
    await this.leases.release(
      (projectId) => this.stepping.has(projectId) || mine.some((state) => state.projectId === projectId),
    );
    const worked = await retention.sweepIdsIfDue(now);
    if (this.stopping.signal.aborted) return worked;
    const ready = mine
      .filter(
        ({ projectId }) =>
          !this.stepping.has(projectId) && (this.backoff.get(projectId)?.untilMs ?? 0) <= now.getTime(),
      )
      .sort((x, y) => (this.started.get(x.projectId) ?? 0) - (this.started.get(y.projectId) ?? 0))
      .slice(0, Math.max(0, STEPS_AT_ONCE - this.stepping.size));
    const steps = ready.map((state) => {
      const step = this.work(state, now)
        .catch((error: unknown) => {
          this.report(error);
          return false;
        })
        .finally(() => {
          this.stepping.delete(state.projectId);
          this.wakeUp?.();
        });
      this.started.set(state.projectId, Date.now());
      this.stepping.set(state.projectId, step);
      return step;
    });
    const done = await Promise.race([Promise.all(steps), delay(this.pollMs).then(() => [])]);
    return done.some(Boolean) || worked;
  }

  /** A step of one project's queue under its lease; a failure backs the project off, or parks the segment. */
  private async work(state: QueueState, now: Date): Promise<boolean> {
    const hasWork = state.reserved > state.applied;
    const { retention, queue } = this.options;
    if (!hasWork && !retention.due(state.projectId, now)) return false;
    let epoch: number | undefined;
    try {
      // Under the project's lock: its lease taken once, and its queue read again (a fold or erasure carried out
      // meanwhile moved it on).
      const outcome = await this.projects.run([state.projectId], async () => {
        epoch = (await this.lease(state.projectId, now, hasWork))?.epoch;
        if (epoch === undefined) return "idle";
        return projectStep(
          this.options,
          this.step,
          await heldQueue(this.options, await queue.read(state.projectId), epoch),
        );
      });
      if (epoch === undefined) return false;
      if (outcome === "done") this.moved.emit(state.projectId);
      this.backoff.delete(state.projectId);
      if (outcome === "gap") return this.gaps.close(state, now);
      this.gaps.closed(state.projectId);
      return outcome === "done" || (await retention.sweepIfDue(state.projectId, now));
    } catch (error) {
      if (error instanceof LeaseLost) {
        this.leases.lost(state.projectId);
        return false;
      }
      this.report(error);
      if (!(error instanceof SegmentFailure) || epoch === undefined) return this.backOff(state.projectId, now);
      const { seq, kept } = error;
      const count = await queue.failed(state.projectId, seq, epoch).catch(() => 0);
      if (count >= this.options.parkAfter && !kept) {
        const segment = await this.options.segments.head(state.projectId, seq);
        const events = segment?.count ?? 0;
        await this.options.parked.park({ projectId: state.projectId, seq, events, error: error.message, at: now });
        await queue.passParked(state.projectId, seq, epoch);
        return true;
      }
      return this.backOff(state.projectId, now);
    }
  }

  /** A failing project waits before it is tried again: doubling from a second, up to 30 s. */
  private backOff(projectId: string, now: Date): boolean {
    const ms = Math.min(MAX_BACKOFF_MS, 2 * (this.backoff.get(projectId)?.ms ?? FIRST_BACKOFF_MS / 2));
    this.backoff.set(projectId, { untilMs: now.getTime() + ms, ms });
    return false;
  }

  /** The project's lease, taken when there is work (or a sweep to run) and not held (or no longer: it ran out). */
  private lease(projectId: string, now: Date, hasWork: boolean) {
    const wanted = hasWork || this.options.retention.due(projectId, now);
    return this.leases.take(projectId, now, wanted, () => this.options.summed.leaseLapsed(projectId));
  }

  /** Says this worker is alive, and renews its leases: on a timer, so neither waits for a long step. */
  private async renew(): Promise<void> {
    this.listed = await this.heartbeat();
    await this.leases.renew(this.options.clock.now());
  }

  private heartbeat(): Promise<readonly ListedWorker[]> {
    const now = this.options.clock.now();
    return this.options.workers.heartbeat(this.id, new Date(now.getTime() + this.leaseMs));
  }

  private async idle(ms: number): Promise<void> {
    const woken = new Promise<void>((resolve) => (this.wakeUp = resolve));
    await Promise.race([woken, delay(ms, undefined, { signal: this.stopping.signal }).catch(() => undefined)]);
    this.wakeUp = undefined;
  }
}
