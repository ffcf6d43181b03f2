import { deviceKey, partnerKey } from "../../players/rules/identity-key.js";
import { dayOf, nameField } from "../rollup-keys.js";
import type { EventIdStore } from "../queue/event-id-store.js";
import type { EventNameStore } from "../rollups/event-name-store.js";
import { Planner, type Plan, type SumBackfillStep } from "./plan.js";
import type { PlayerDirectory } from "../player-directory.js";
import type { PlayerRollup } from "../rollups/player-rollup.js";
import type { PlayerRollupStore } from "../rollups/player-rollup-store.js";
import type { SegmentStore } from "../queue/segment-store.js";
import { millionthsOf } from "../reads/sums.js";
import type { SummedPropertyStore } from "../rollups/summed-property-store.js";
import type { QueuedEvent } from "../queue/entries.js";

export interface BackfillDeps {
  segments: SegmentStore;
  eventIds: EventIdStore;
  directory: PlayerDirectory;
  playerRollups: PlayerRollupStore;
  names: EventNameStore;
  summed: SummedPropertyStore;
  /** (player, day) totals a step of a back-fill gathers before it stops at the end of a segment. */
  sumBackfillStep: number;
  /** The events of a segment that were counted (event_id repeats left out), as its apply decided. */
  countable: (projectId: string, seq: number, events: readonly QueuedEvent[]) => Promise<QueuedEvent[]>;
}

const NOTHING: Plan = { players: [], cohorts: [] };

/**
 * Plans a step of sum `id`'s back-fill: segment `seq`, queued by the update (`after` absent), turns the sum on
 * from `seq` (the sum counts every event applied after it as it is applied) and counts its first step; each step
 * adds the raw events still kept of the segments after `after` and before the sum's, in queue order, until it has
 * gathered `sumBackfillStep` totals, each to the history its count is in now (its player, or the player its device
 * was folded into) and to the cohorts that history is counted in. An event is before the sum's segment (one step)
 * or after it (its apply), never both nor neither. A step not where the back-fill stands (a retried update's
 * segment, a continuation queued twice by a replay) or of a sum turned off plans nothing.
 */
export async function planSumBackfill(
  projectId: string,
  seq: number,
  work: { id: string; after?: number },
  firstDay: string,
  deps: BackfillDeps,
): Promise<Plan> {
  const { id } = work;
  const after = work.after ?? 0;
  const pair = (await deps.summed.list(projectId)).find((one) => one.id === id);
  if (!pair || pair.ready || (pair.counted ?? 0) !== after) return NOTHING;
  if (work.after === undefined) {
    if (pair.from !== null && pair.from !== seq) return NOTHING;
    await deps.summed.update(projectId, (pairs) => pairs.map((one) => (one.id === id ? { ...one, from: seq } : one)));
  } else if (pair.from === null) return NOTHING;
  const before = pair.from ?? seq;

  // Per identity key as the apply saw the event (a device's own, or its player's), per day: millionths.
  const totals = new Map<string, Map<string, number>>();
  let count = 0;
  let through = after;
  const complete = await deps.segments.forEachEventBetween(projectId, after, before, async (segmentSeq, events) => {
    if (count >= deps.sumBackfillStep) return false;
    through = segmentSeq;
    const summed = events.filter((event) => event.n === pair.name && dayOf(event.t) >= firstDay);
    if (summed.length === 0) return true;
    for (const event of await deps.countable(projectId, segmentSeq, summed)) {
      const millionths = millionthsOf(event.p, pair.property);
      if (millionths === 0) continue;
      const key = event.u !== null ? partnerKey(event.u) : deviceKey(event.d!);
      const days = totals.get(key) ?? new Map<string, number>();
      if (!days.has(dayOf(event.t))) count++;
      totals.set(key, days.set(dayOf(event.t), (days.get(dayOf(event.t)) ?? 0) + millionths));
    }
    return true;
  });
  const step: SumBackfillStep = { id, after, through, done: complete };
  return { ...(await planTotals(projectId, pair.name, id, totals, firstDay, deps)), sumBackfill: step };
}

/** The plan adding each key's totals to the history it is counted in now and the cohorts of that history. */
async function planTotals(
  projectId: string,
  name: string,
  id: string,
  totals: ReadonlyMap<string, ReadonlyMap<string, number>>,
  firstDay: string,
  deps: BackfillDeps,
): Promise<Plan> {
  if (totals.size === 0) return NOTHING;
  const holders = await historiesNow(projectId, [...totals.keys()], deps);
  const names = await deps.names.current(projectId, [name]);
  const planner = new Planner({
    projectId,
    firstDay,
    rollups: new Map([...holders.values()].map((rollup) => [rollup.identityKey, rollup])),
    cohortsNow: new Map(),
    traitKeysNow: new Map(),
    names,
    summed: new Map(),
  });
  for (const [key, days] of totals) {
    const holder = holders.get(key);
    if (!holder) continue;
    for (const [day, millionths] of days)
      planner.addBackfilledSum(holder.identityKey, day, nameField(name), id, millionths);
  }
  return planner.plan();
}

/**
 * The history each key's events are counted in now: a device-only event went to the device's player when the
 * device was linked already, else to the device's history, which a fold later moved (`folded_into`).
 */
async function historiesNow(
  projectId: string,
  keys: readonly string[],
  { directory, playerRollups }: BackfillDeps,
): Promise<Map<string, PlayerRollup>> {
  const devices = keys.filter((key) => key.startsWith("d:")).map((key) => key.slice(2));
  const owners = await directory.deviceOwners(projectId, devices);
  // Where each key's events are now, one hop of folds a round (a fold's target is never folded for long).
  let at = new Map(keys.map((key) => [key, key.startsWith("d:") ? (owners.get(key.slice(2)) ?? key) : key]));
  const found = new Map<string, PlayerRollup>();
  for (let hop = 0; at.size > 0 && hop < 8; hop++) {
    const histories = await playerRollups.read(projectId, [...new Set(at.values())], { fillMemory: true });
    const next = new Map<string, string>();
    for (const [key, holder] of at) {
      const history = histories.get(holder);
      if (history?.foldedInto) next.set(key, history.foldedInto);
      else if (history) found.set(key, history);
    }
    at = next;
  }
  return found;
}
