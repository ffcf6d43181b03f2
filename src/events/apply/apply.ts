import type { TraitValue } from "../../players/rules/normalise.js";
import { traitIndexEntry } from "../../players/rules/normalise.js";
import { deviceKey, partnerKey } from "../../players/rules/identity-key.js";
import { tagCohort, traitCohort } from "../rollups/cohort-rollup-store.js";
import type { QueuedEvent } from "../queue/entries.js";
import type { EventIdStore } from "../queue/event-id-store.js";
import type { Clock } from "../../clock.js";
import { nameOfField, type RetentionWindow } from "../rollup-keys.js";
import type { ChangedPlayers } from "../../players/changed-players.js";
import type { Step } from "../../steps.js";
import type { CohortRollupStore } from "../rollups/cohort-rollup-store.js";
import type { QueueStateStore, QueueWriter } from "../queue/queue.js";
import { Planner, type Plan, type SumBackfillStep } from "./plan.js";
import type { PlanStore } from "../rollups/plan-store.js";
import type { PlayerCohorts, PlayerDirectory } from "../player-directory.js";
import type { PlayerRollupStore } from "../rollups/player-rollup-store.js";
import type { PlayerRollup } from "../rollups/player-rollup.js";
import type { Segment, SegmentStore } from "../queue/segment-store.js";
import { planSumBackfill } from "./sum-backfill.js";
import type { SummedPropertyStore } from "../rollups/summed-property-store.js";
import type { TraitCohorts } from "./trait-cohorts.js";
import type { EventTraitKeyStore } from "../rollups/event-trait-key-store.js";
import type { EventNameStore } from "../rollups/event-name-store.js";

export interface PlanningDeps {
  directory: PlayerDirectory;
  playerRollups: PlayerRollupStore;
  eventIds: EventIdStore;
  /** Which trait keys have materialised cohorts, per project (written here, in queue order). */
  traitKeys: EventTraitKeyStore;
  /** Gathers the evidence of trait keys' cardinality from the profiles a plan reads. */
  traitCohorts: TraitCohorts;
  /** Queues the backfill of a key that proved low-cardinality. */
  writer: QueueWriter;
  /** The places of names, which decide the cohort document a count is in. */
  names: EventNameStore;
  /** The raw events a sum's back-fill reads. */
  segments: SegmentStore;
  /** The properties summed, per project. */
  summed: SummedPropertyStore;
  /** (player, day) totals a step of a sum's back-fill gathers (EVENT_SUM_BACKFILL_STEP). */
  sumBackfillStep: number;
}

/** What the apply of a segment reads and writes beyond what its planning reads. */
export interface ApplyDeps extends PlanningDeps {
  queue: QueueStateStore;
  plans: PlanStore;
  cohortRollups: CohortRollupStore;
  /** The changed players recorded for the charts: a resync carrying their stamp settles them. */
  changes: ChangedPlayers;
  window: RetentionWindow;
  clock: Clock;
}

/** One segment to apply, and what the worker knows of it. */
export interface SegmentToApply {
  seq: number;
  segment: Segment;
  /**
   * In order (the cursor moves past it next): only such a segment leaves its history changes to be written behind,
   * since the cursor's record of what is written counts in order.
   */
  inOrder: boolean;
  /**
   * Whether a plan may be stored for it already: after the lease lapsed (another worker's) or an apply of this one's
   * stopped midway. Otherwise the worker plans without looking; should a plan be stored all the same (a stalled
   * worker's), settling answers it.
   */
  lookForPlan: boolean;
  /** Whether this worker's lease still runs. */
  leaseHolds: () => boolean;
}

/** Players a backfill resyncs per segment. */
const BACKFILL_SLICE = 500;

/**
 * The apply of a segment, in its named steps: `plan` (the stored plan, or one decided and stored before anything is
 * written), `erase` (an erasure's raw events), `histories` and `cohorts` (each rollup document absorbs the segment
 * once: absorb.ts), `backfill` and `sum_backfill` (the follow-up segments they queue), `settle` (the changed players
 * a resync carries). The worker then moves the cursor past it (`advance`). False when the plan it decided was stale.
 */
export async function applySegment(deps: ApplyDeps, step: Step, target: SegmentToApply): Promise<boolean> {
  const { seq, segment, inOrder } = target;
  const { projectId, work } = segment;
  const planned = await step("plan", () => storedPlan(deps, target));
  if (!planned) return false;
  const { plan, fresh } = planned;
  // An erasure's raw events go before its histories move: a failure here leaves reads as they were.
  if (work?.kind === "resync" && work.erased?.length) {
    await step("erase", () => deps.segments.deleteEvents(projectId!, seq, eventsOfPlayers(work.erased!)));
  }
  const writeBehind = inOrder ? deps.clock.now() : undefined;
  await step("histories", () => deps.playerRollups.absorb(seq, plan.players, { fresh, writeBehind }));
  await step("cohorts", () => deps.cohortRollups.absorb(seq, plan.cohorts, { fresh }));
  if (plan.backfill) await step("backfill", () => backfill(deps, projectId!, seq, plan.backfill!));
  if (plan.sumBackfill) await step("sum_backfill", () => sumBackfillStep(deps, projectId!, plan.sumBackfill!));
  if (work?.kind === "resync" && work.change) {
    const { change, identityKeys, folds = [] } = work;
    await step("settle", () => deps.changes.settle(projectId!, change, [...identityKeys, ...folds.map((f) => f.from)]));
  }
  return true;
}

/**
 * The segment's plan, stored before anything is written (`fresh`: this worker decided it), or null when a plan it
 * decided came after another worker finished the segment (and deleted its plan): stale, so dropped. None can have
 * while this worker's lease runs.
 */
async function storedPlan(deps: ApplyDeps, { seq, segment, lookForPlan, leaseHolds }: SegmentToApply) {
  const { plans, queue, window, clock } = deps;
  const found = lookForPlan ? await plans.find(seq) : null;
  if (found) return { plan: found, fresh: false };
  const settled = await plans.settle(seq, await planSegment(segment, window.firstDay(clock.now()), deps));
  if (settled.mine && !leaseHolds() && (await queue.read()).applied >= seq) {
    await plans.delete(seq);
    return null;
  }
  return { plan: settled.plan, fresh: settled.mine };
}

/**
 * Queues resyncs of a key's holders (planned with the key materialised), then marks the key ready from the last of
 * them. Run again after a crash, it queues them again: a resync is idempotent.
 */
async function backfill(
  deps: ApplyDeps,
  projectId: string,
  seq: number,
  { key, holders }: NonNullable<Plan["backfill"]>,
) {
  let last = seq;
  for (let from = 0; from < holders.length; from += BACKFILL_SLICE) {
    const identityKeys = holders.slice(from, from + BACKFILL_SLICE);
    last = await deps.writer.enqueue(projectId, { kind: "resync", identityKeys }, 0, new Date(0));
  }
  await deps.traitKeys.ready(projectId, key, last);
}

/**
 * A step of a sum's back-fill is written: records how far it counted, then marks the sum ready or queues the next
 * step. Run again after a crash, it may queue the next step twice: the second plans nothing (sum-backfill.ts).
 */
async function sumBackfillStep(deps: ApplyDeps, projectId: string, { id, after, through, done }: SumBackfillStep) {
  const pairs = await deps.summed.update(projectId, (pairs) =>
    pairs.some((pair) => pair.id === id && (pair.counted ?? 0) === after && !pair.ready)
      ? pairs.map((pair) => (pair.id === id ? { ...pair, counted: through, ready: done } : pair))
      : null,
  );
  if (done || !pairs.some((pair) => pair.id === id && !pair.ready)) return;
  await deps.writer.enqueue(projectId, { kind: "sum", id, after: through }, 0, new Date(0));
}

/** Cohort ids of a player as of now: every tag, and the value of each materialised trait key. */
export function cohortIds(player: PlayerCohorts | undefined, materialised: ReadonlySet<string>): string[] {
  if (!player) return [];
  const ids = player.tags.map(tagCohort);
  for (const [key, value] of player.traits as ReadonlyMap<string, TraitValue>) {
    if (materialised.has(key)) ids.push(traitCohort(traitIndexEntry(key, value)));
  }
  return ids;
}

/**
 * Decides what segment `segment` changes, reading the state it starts from:
 * the histories of the players it touches, their cohorts as of now, device
 * links, and which event_ids are repeats.
 */
async function planSegment(segment: Segment, firstDay: string, deps: PlanningDeps): Promise<Plan> {
  const { projectId, work } = segment;
  if (projectId === null || work === null) return { players: [], cohorts: [] };
  if (work.kind === "materialise") {
    // Every earlier segment is written: the key's holders are the players whose last touch saw it; every later
    // segment is planned with the key materialised.
    await deps.traitKeys.addMaterialised(projectId, work.key);
    const holders = await deps.playerRollups.holdersOf(projectId, work.key);
    return { players: [], cohorts: [], backfill: { key: work.key, holders } };
  }
  if (work.kind === "sum") {
    return planSumBackfill(projectId, segment.seq, work, firstDay, {
      ...deps,
      countable: (id, seq, events) => countable(id, seq, events, deps.eventIds),
    });
  }
  const folds: [string, string][] = [];
  const byPlayer = new Map<string, QueuedEvent[]>();
  let resyncs: string[] = [];
  let erased: string[] = [];
  if (work.kind === "events") {
    const events = await countable(projectId, segment.seq, work.events, deps.eventIds);
    const devices = [...new Set(events.filter((e) => e.u === null).map((e) => e.d!))];
    const owners = await deps.directory.deviceOwners(projectId, devices);
    for (const [device, owner] of owners) folds.push([deviceKey(device), owner]);
    for (const event of events) {
      const key = event.u !== null ? partnerKey(event.u) : (owners.get(event.d!) ?? deviceKey(event.d!));
      byPlayer.set(key, [...(byPlayer.get(key) ?? []), event]);
    }
  } else {
    resyncs = work.identityKeys;
    erased = work.erased ?? [];
    for (const { from, into } of work.folds ?? []) folds.push([from, into]);
  }

  const keys = [...new Set([...byPlayer.keys(), ...resyncs, ...erased, ...folds.flat()])];
  // Every name the plan counts is registered (`names`): the events' at ingestion, the histories' when theirs were.
  const [rollups, profiles, materialised, summed] = await Promise.all([
    deps.playerRollups.read(projectId, keys, { fillMemory: true }),
    deps.directory.cohortsOf(projectId, keys),
    deps.traitKeys.materialisedKeys(projectId),
    deps.summed.summedAt(projectId, segment.seq),
  ]);
  const names = await deps.names.current(projectId, namesIn(byPlayer, rollups));
  for (const key of await deps.traitCohorts.observe(projectId, profiles, materialised)) {
    await deps.writer.enqueue(projectId, { kind: "materialise", key }, 0, new Date(0));
    await deps.traitCohorts.markRequested(projectId, key);
  }
  const cohortsNow = new Map(keys.map((key) => [key, cohortIds(profiles.get(key), materialised)]));
  const traitKeysNow = new Map(keys.map((key) => [key, [...(profiles.get(key)?.traits.keys() ?? [])]]));
  const planner = new Planner({ projectId, firstDay, rollups, cohortsNow, traitKeysNow, names, summed });
  for (const key of erased) planner.erase(key);
  for (const [device, owner] of folds) planner.fold(device, owner);
  for (const key of resyncs) planner.resync(key);
  for (const [key, events] of byPlayer) planner.addEvents(key, events);
  return planner.plan();
}

/** The events of a segment minus repeats of an event_id the project used before. */
async function countable(
  projectId: string,
  seq: number,
  events: readonly QueuedEvent[],
  eventIds: EventIdStore,
): Promise<QueuedEvent[]> {
  const claims = events.flatMap((event, index) => (event.i === null ? [] : [{ eventId: event.i, index, t: event.t }]));
  if (claims.length === 0) return [...events];
  const repeats = await eventIds.claim(projectId, seq, claims);
  return events.filter((_, index) => !repeats.has(index));
}

/** Every name the plan counts: the events' and those of the histories they touch. */
function namesIn(byPlayer: ReadonlyMap<string, QueuedEvent[]>, rollups: ReadonlyMap<string, PlayerRollup>): string[] {
  const names = new Set<string>();
  for (const events of byPlayer.values()) for (const event of events) names.add(event.n);
  for (const rollup of rollups.values()) {
    for (const day of Object.values(rollup.days)) for (const field of Object.keys(day)) names.add(nameOfField(field));
  }
  return [...names];
}

/** Whether an event is one of these players' (by its partner id, else its device). */
export function eventsOfPlayers(identityKeys: readonly string[]): (event: QueuedEvent) => boolean {
  const keys = new Set(identityKeys);
  return (event) => keys.has(event.u !== null ? partnerKey(event.u) : deviceKey(event.d!));
}
