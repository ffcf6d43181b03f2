import type { PlayerNumbers } from "../../sets/player-numbers.js";
import type { ActivityStore } from "../activity/activity-store.js";
import type { RawEventStore } from "../activity/raw-events.js";
import type { QueueWriter } from "../queue/queue-writer.js";
import { millionthsOf } from "../reads/sums.js";
import type { SummedPropertyStore } from "../rollups/summed-property-store.js";
import { identityOf } from "./apply-batch.js";

export interface BackfillDeps {
  numbers: PlayerNumbers;
  activity: ActivityStore;
  raw: RawEventStore;
  summed: SummedPropertyStore;
  writer: QueueWriter;
}

/**
 * A step of sum `id`'s back-fill, queue segment `seq`: the first (`after` absent) turns the sum on from `seq` (each
 * event applied after it is summed as it is applied); each step adds the raw events of one day (the first after
 * `after` with events of the sum's name), those of segments before the sum's, to the totals of the players they are
 * counted for now, each chunk taking the step once (its `hw`); then queues the next step, or marks the sum ready. A
 * step not where the back-fill stands (a retried update's segment, a continuation queued twice) or of a sum turned off
 * does nothing.
 */
export async function sumBackfillStep(
  deps: BackfillDeps,
  { projectId, seq, id, after, days }: { projectId: string; seq: number; id: string; after?: string; days: string[] },
): Promise<void> {
  const pair = (await deps.summed.list(projectId)).find((one) => one.id === id);
  if (!pair || pair.ready || (pair.counted ?? null) !== (after ?? null)) return;
  if (after === undefined) {
    if (pair.from !== null && pair.from !== seq) return;
    await deps.summed.update(projectId, (pairs) => pairs.map((one) => (one.id === id ? { ...one, from: seq } : one)));
  } else if (pair.from === null) return;
  const from = pair.from ?? seq;
  const named = await deps.activity.namesOn(projectId, days);
  const day = days.find((one) => (after === undefined || one > after) && named.get(one)?.has(pair.name));
  if (day === undefined) {
    await deps.summed.update(projectId, (pairs) => pairs.map((one) => (one.id === id ? { ...one, ready: true } : one)));
    return;
  }
  const totals = new Map<string, number>();
  for await (const { seq: rawSeq, events } of deps.raw.ofDay(projectId, day)) {
    if (rawSeq >= from) continue;
    for (const event of events) {
      const millionths = event.n === pair.name ? millionthsOf(event.p, pair.property) : 0;
      if (millionths !== 0) totals.set(identityOf(event), (totals.get(identityOf(event)) ?? 0) + millionths);
    }
  }
  const numbers = await deps.numbers.find(projectId, [...totals.keys()]);
  const byNumber = new Map<number, number>();
  for (const [key, millionths] of totals) {
    const number = numbers.get(key);
    if (number !== undefined) byNumber.set(number, (byNumber.get(number) ?? 0) + millionths);
  }
  const players = [...byNumber].map(([number, millionths]) => ({
    number,
    events: 0,
    sums: new Map([[id, millionths]]),
  }));
  await deps.activity.count(projectId, [{ seq, days: new Map([[day, new Map([[pair.name, players]])]]) }]);
  // The next step first: run again after a crash between the two, this step queues it again, and the later of the
  // two finds the back-fill past it.
  await deps.writer.enqueue(projectId, { kind: "sum", id, after: day });
  await deps.summed.update(projectId, (pairs) =>
    pairs.some((one) => one.id === id && (one.counted ?? null) === (after ?? null))
      ? pairs.map((one) => (one.id === id ? { ...one, counted: day } : one))
      : null,
  );
}
