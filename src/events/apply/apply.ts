import type { TraitValue } from "../../players/rules/normalise.js";
import { traitIndexEntry } from "../../players/rules/normalise.js";
import { deviceKey, partnerKey } from "../../players/rules/identity-key.js";
import { tagCohort, traitCohort } from "../rollups/cohort-rollup-store.js";
import type { QueuedEvent } from "../queue/entries.js";
import type { EventIdStore } from "../queue/event-id-store.js";
import { Planner, type Plan } from "./plan.js";
import type { PlayerCohorts, PlayerDirectory } from "../player-directory.js";
import type { PlayerRollupStore } from "../rollups/player-rollup-store.js";
import type { PlayerRollup } from "../rollups/player-rollup.js";
import { nameOfField } from "../names.js";
import type { QueueWriter } from "../queue/queue-writer.js";
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
export async function planSegment(segment: Segment, firstDay: string, deps: PlanningDeps): Promise<Plan> {
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
