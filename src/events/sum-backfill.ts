import { deviceKey, partnerKey } from "../players/identity-key.js";
import { dayOf } from "./days.js";
import type { EventIdStore } from "./event-id-store.js";
import type { EventNameStore } from "./event-name-store.js";
import { nameField } from "./names.js";
import { Planner, type Plan } from "./plan.js";
import type { PlayerDirectory } from "./player-directory.js";
import type { PlayerRollup } from "./player-rollup.js";
import type { PlayerRollupStore } from "./player-rollup-store.js";
import type { SegmentStore } from "./segment-store.js";
import { millionthsOf } from "./sums.js";
import type { SummedPropertyStore } from "./summed-property-store.js";
import type { QueuedEvent } from "./entries.js";

export interface BackfillDeps {
  segments: SegmentStore;
  eventIds: EventIdStore;
  directory: PlayerDirectory;
  playerRollups: PlayerRollupStore;
  names: EventNameStore;
  summed: SummedPropertyStore;
  /** The events of a segment that were counted (event_id repeats left out), as its apply decided. */
  countable: (projectId: string, seq: number, events: readonly QueuedEvent[]) => Promise<QueuedEvent[]>;
}

const NOTHING: Plan = { players: [], cohorts: [] };

/**
 * A back-fill is one plan, one document: past this many (player, day) totals it would near the 16 MiB a document
 * holds (about 60 bytes each), and a plan that cannot be stored would hold the project's queue for good. Such a sum
 * is turned off instead, and its update answers so (Events.updateProperty).
 */
export const MAX_BACKFILL_TOTALS = 100_000;

/**
 * Plans segment `seq`, which turns sum `id` on: the sum counts every event applied after it as it is applied, and
 * this plan adds the raw events still kept before it, each to the history its count is in now (its player, or
 * the player its device was folded into) and to the cohorts that history is counted in. In queue order, so an
 * event is either before the segment (here) or after it (the apply), never both nor neither. A segment for a sum
 * turned on already (a retried update queues another) or turned off meanwhile plans nothing.
 */
export async function planSumBackfill(
  projectId: string,
  seq: number,
  id: string,
  firstDay: string,
  deps: BackfillDeps,
): Promise<Plan> {
  const pair = (await deps.summed.list(projectId)).find((one) => one.id === id);
  if (!pair || (pair.from !== null && pair.from !== seq)) return NOTHING;
  await deps.summed.update(projectId, (pairs) => pairs.map((one) => (one.id === id ? { ...one, from: seq } : one)));

  // Per identity key as the apply saw the event (a device's own, or its player's), per day: millionths.
  const totals = new Map<string, Map<string, number>>();
  let count = 0;
  await deps.segments.forEachEventBefore(projectId, seq, async (segmentSeq, events) => {
    const summed = events.filter((event) => event.n === pair.name && dayOf(event.t) >= firstDay);
    if (summed.length === 0 || count > MAX_BACKFILL_TOTALS) return;
    for (const event of await deps.countable(projectId, segmentSeq, summed)) {
      const millionths = millionthsOf(event.p, pair.property);
      if (millionths === 0) continue;
      const key = event.u !== null ? partnerKey(event.u) : deviceKey(event.d!);
      const days = totals.get(key) ?? new Map<string, number>();
      if (!days.has(dayOf(event.t))) count++;
      totals.set(key, days.set(dayOf(event.t), (days.get(dayOf(event.t)) ?? 0) + millionths));
    }
  });
  if (count > MAX_BACKFILL_TOTALS) {
    await deps.summed.update(projectId, (pairs) => pairs.filter((one) => one.id !== id));
    return NOTHING;
  }
  const holders = await historiesNow(projectId, [...totals.keys()], deps);
  const names = await deps.names.current(projectId, [pair.name]);
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
    for (const [day, millionths] of days) {
      planner.addBackfilledSum(holder.identityKey, day, nameField(pair.name), id, millionths);
    }
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
