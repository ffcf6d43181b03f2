import type { Clock } from "../../clock.js";
import type { Step } from "../../steps.js";
import type { QueueState, QueueStore } from "../queue/queue-store.js";
import { isControl, type Segment, type SegmentStore } from "../queue/segment-store.js";
import { daysBetween, parseDay, type RetentionWindow } from "../rollup-keys.js";
import { applyBatch, type BatchDeps, type EventsSegment } from "./apply-batch.js";
import { carryOutErasure, carryOutFold, type ControlDeps } from "./controls.js";
import { unavailableOf } from "../../db/errors.js";
import { sumBackfillStep, type BackfillDeps } from "./sum-backfill.js";

/** Segments an apply takes together at most, and events: under a backlog, fewer writes an event. */
const BATCH_SEGMENTS = 16;
const BATCH_EVENTS = 8_000;

export interface ProjectStepDeps extends BatchDeps, ControlDeps, BackfillDeps {
  queue: QueueStore;
  segments: SegmentStore;
  window: RetentionWindow;
  clock: Clock;
}

/** A project's queue as a worker holding its lease sees it. */
export interface HeldQueue {
  state: QueueState;
  epoch: number;
  /** The erasures carried out ahead of their place, by key: the earlier events of those keys are dropped. */
  erasedAt: ReadonlyMap<string, number>;
}

/** The queue of a project whose lease is held at `epoch`, with the erasures carried out ahead of their place. */
export async function heldQueue(deps: ProjectStepDeps, state: QueueState, epoch: number): Promise<HeldQueue> {
  const erasedAt = new Map<string, number>();
  for (const seq of state.ahead) {
    const segment = await deps.segments.find(state.projectId, seq);
    if (segment?.work?.kind === "erase") for (const key of segment.work.identityKeys) erasedAt.set(key, seq);
  }
  return { state, epoch, erasedAt };
}

/**
 * One step of a project's queue, by a worker holding its lease: the first fold or erasure queued and not carried out
 * (before any events ahead of it), else the segments after the cursor: a batch of events, a step of a sum's
 * back-fill, a fold or erasure in its place, or a tombstone; the cursor moves past them (`advance`). False when there
 * was nothing to do; `gap`: the next sequence number is reserved and not written.
 */
export async function projectStep(
  deps: ProjectStepDeps,
  step: Step,
  held: HeldQueue,
): Promise<"done" | "idle" | "gap"> {
  const { state, epoch } = held;
  const { projectId } = state;
  const control = state.controls.find((seq) => !state.ahead.has(seq) && seq > state.applied);
  if (control !== undefined) {
    const segment = await deps.segments.find(projectId, control);
    if (segment) await carryOut(deps, step, segment);
    await step("advance", () => deps.queue.markAhead(projectId, control, epoch));
    return "done";
  }
  const next = state.applied + 1;
  if (next > state.reserved) return "idle";
  if (state.ahead.has(next)) {
    await advance(deps, step, held, [next]);
    return "done";
  }
  const first = await deps.segments.find(projectId, next);
  if (!first) return "gap";
  if (first.work?.kind === "events") {
    const batch = await eventsBatch(deps, state, first as EventsSegment);
    const firstDay = deps.window.firstDay(deps.clock.now());
    // A batch that fails is tried again with its first segment alone (eventsBatch): only a segment that fails alone
    // is parked.
    await failingAs(
      next,
      () => applyBatch(deps, step, { projectId, segments: batch, firstDay, erasedAt: held.erasedAt }),
      batch.length > 1,
    );
    await advance(
      deps,
      step,
      held,
      batch.map((segment) => segment.seq),
    );
    return "done";
  }
  await failingAs(next, () => carryOut(deps, step, first), isControl(first.work));
  await advance(deps, step, held, [next]);
  return "done";
}

/** The first fold or erasure queued and not carried out, carried out ahead of the events before it; false: none. */
export async function controlStep(deps: ProjectStepDeps, step: Step, { state, epoch }: HeldQueue): Promise<boolean> {
  const control = state.controls.find((seq) => !state.ahead.has(seq) && seq > state.applied);
  if (control === undefined) return false;
  await failingAs(
    control,
    async () => {
      const segment = await deps.segments.find(state.projectId, control);
      if (segment) await carryOut(deps, step, segment);
      if (!(await step("advance", () => deps.queue.markAhead(state.projectId, control, epoch)))) throw new LeaseLost();
    },
    true,
  );
  return true;
}

/** The project's lease moved to another worker (its epoch grew) while this one applied: its writes to the cursor are refused. */
export class LeaseLost extends Error {
  constructor() {
    super("the project's queue is another worker's now");
  }
}

/** A step that failed, and the segment it was applying; `kept`: not to be parked (a fold, an erasure, a batch). */
export class SegmentFailure extends Error {
  constructor(
    readonly seq: number,
    readonly kept: boolean,
    cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
  }
}

/** A failure of segment `seq`'s step, but the database's being away (a backoff, never counted towards parking). */
async function failingAs<T>(seq: number, run: () => Promise<T>, kept: boolean): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const passed = error instanceof SegmentFailure || error instanceof LeaseLost || unavailableOf(error);
    throw passed ? error : new SegmentFailure(seq, kept, error);
  }
}

/** A fold, an erasure or a step of a sum's back-fill (a tombstone does nothing). */
async function carryOut(deps: ProjectStepDeps, step: Step, { projectId, seq, work }: Segment): Promise<void> {
  const days = windowDays(deps);
  if (work?.kind === "fold") await carryOutFold(deps, step, { projectId, seq, moves: work.moves, days });
  else if (work?.kind === "erase") {
    await carryOutErasure(deps, step, { projectId, seq, identityKeys: work.identityKeys, days });
  } else if (work?.kind === "sum") {
    await step("sum_backfill", () => sumBackfillStep(deps, { projectId, seq, id: work.id, after: work.after, days }));
  }
}

/** `first` and the events segments after it, up to the batch's bounds or the first segment of other work. */
async function eventsBatch(deps: ProjectStepDeps, state: QueueState, first: EventsSegment): Promise<EventsSegment[]> {
  const batch = [first];
  // While it fails, a segment is applied alone: the one that fails is the one parked.
  if (state.failing?.seq === first.seq) return batch;
  let events = first.count;
  for (let seq = first.seq + 1; seq <= state.reserved && batch.length < BATCH_SEGMENTS; seq++) {
    if (state.ahead.has(seq) || state.controls.includes(seq)) break;
    const segment = await deps.segments.find(state.projectId, seq);
    if (segment?.work?.kind !== "events" || events + segment.count > BATCH_EVENTS) break;
    batch.push(segment as EventsSegment);
    events += segment.count;
  }
  return batch;
}

/** The cursor past `seqs` (in a row after it), and their segments deleted. */
async function advance(deps: ProjectStepDeps, step: Step, held: HeldQueue, seqs: number[]) {
  const { projectId } = held.state;
  await step("advance", async () => {
    if (!(await deps.queue.advance(projectId, seqs[0], seqs.at(-1)!, held.epoch))) throw new LeaseLost();
    await deps.segments.deleteApplied(projectId, seqs);
  });
}

/** The days of the retention window, to today: where folds and erasures look for a player's activity. */
function windowDays({ window, clock }: ProjectStepDeps): string[] {
  const now = clock.now();
  return daysBetween(window.oldest(now), parseDay(now.toISOString().slice(0, 10))!);
}
