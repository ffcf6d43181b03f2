import type { PlayerNumbers } from "../../sets/player-numbers.js";
import type { ActivityStore } from "../activity/activity-store.js";
import type { RawEventStore } from "../activity/raw-event-store.js";
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
  /** Raw events a step reads at most, beyond the day it is in (EVENT_SUM_BACKFILL_STEP): a step fits a deadline. */
  backfillStepEvents: number;
}

/**
 * A step of sum `id`'s back-fill, queue segment `seq`: the first (`after` absent) turns the sum on from `seq` (each
 * event applied after it is summed as it is applied); each step adds the raw events of the days after `after` with
 * events of the sum's name (whole days, until backfillStepEvents are read), those of segments before the sum's, to the totals
 * of the players they are counted for now, each chunk taking the step once (its `hw`); then queues the next step, or
 * marks the sum ready once no day is left. A step not where the back-fill stands (a retried update's segment, a
 * continuation queued twice) or of a sum turned off does nothing.
 */
export async function sumBackfillStep(
  deps: BackfillDeps,
  { projectId, seq, id, after, days }: { projectId: string; seq: number; id: string; after?: string; days: string[] },
): Promise<void> {
  const pair = (await deps.summed.list(projectId)).find((one) => one.id === id);
  if (!pair || pair.ready || (pair.counted ?? null) !== (after ?? null)) return;
  // The first step turns the sum on from its segment (written with its counts below: no later segment is applied
  // before this one ends); a later step's sum is on already.
  if (after === undefined ? pair.from !== null && pair.from !== seq : pair.from === null) return;
  const from = pair.from ?? seq;
  const named = await deps.activity.namesOn(projectId, days);
  const left = days.filter((one) => (after === undefined || one > after) && named.get(one)?.has(pair.name));
  if (left.length === 0) {
    await deps.summed.update(projectId, (pairs) =>
      pairs.map((one) => (one.id === id ? { ...one, from, ready: true } : one)),
    );
    return;
  }
  const totals = new Map<string, Map<string, number>>();
  let read = 0;
  let through: string | undefined;
  let done = true;
  for await (const { day, seq: rawSeq, events } of deps.raw.ofDays(projectId, left)) {
    // Whole days a step: past its bound, the step ends where a day does.
    if (day !== through && read >= deps.backfillStepEvents) {
      done = false;
      break;
    }
    through = day;
    read += events.length;
    if (rawSeq >= from) continue;
    const ofDay = totals.get(day) ?? totals.set(day, new Map()).get(day)!;
    for (const event of events) {
      const millionths = event.n === pair.name ? millionthsOf(event.p, pair.property) : 0;
      if (millionths !== 0) ofDay.set(identityOf(event), (ofDay.get(identityOf(event)) ?? 0) + millionths);
    }
  }
  const keys = [...new Set([...totals.values()].flatMap((ofDay) => [...ofDay.keys()]))];
  const numbers = await deps.numbers.find(projectId, keys);
  const activity = new Map(
    [...totals].map(([day, ofDay]) => {
      const byNumber = new Map<number, number>();
      for (const [key, millionths] of ofDay) {
        const number = numbers.get(key);
        if (number !== undefined) byNumber.set(number, (byNumber.get(number) ?? 0) + millionths);
      }
      const players = [...byNumber].map(([number, total]) => ({ number, events: 0, sums: new Map([[id, total]]) }));
      return [day, new Map([[pair.name, players]])];
    }),
  );
  await deps.activity.count(projectId, [{ seq, days: activity }]);
  // The next step first: run again after a crash between the two, this step queues it again, and the later of the
  // two finds the back-fill past it.
  if (!done) await deps.writer.enqueue(projectId, { kind: "sum", id, after: through });
  await deps.summed.update(projectId, (pairs) =>
    pairs.some((one) => one.id === id && (one.counted ?? null) === (after ?? null))
      ? pairs.map((one) => (one.id === id ? { ...one, from, counted: through, ready: done } : one))
      : null,
  );
}
