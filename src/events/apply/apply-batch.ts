import { deviceKey, partnerKey } from "../../players/rules/identity-key.js";
import type { PlayerNumbers } from "../../sets/player-numbers.js";
import type { Step } from "../../steps.js";
import type { PlayerActivity } from "../activity/activity-chunk.js";
import type { ActivityStore, SegmentActivity } from "../activity/activity-store.js";
import type { RawBatch, RawEventStore } from "../activity/raw-event-store.js";
import type { QueuedEvent } from "../queue/entries.js";
import type { EventIdStore } from "../queue/event-id-store.js";
import type { Segment } from "../queue/segment-store.js";
import { millionthsOf } from "../reads/sums.js";
import { dayOf } from "../rollup-keys.js";
import type { SummedPropertyStore } from "../rollups/summed-property-store.js";

export interface BatchDeps {
  numbers: PlayerNumbers;
  eventIds: EventIdStore;
  raw: RawEventStore;
  activity: ActivityStore;
  summed: SummedPropertyStore;
}

/** An events segment. */
export type EventsSegment = Segment & { work: { kind: "events"; events: QueuedEvent[]; earlier?: number[] } };

/** A batch of a project's event segments, in order, and what decides which of their events count. */
export interface Batch {
  projectId: string;
  segments: readonly EventsSegment[];
  /** Days before this are out of the retention window (the queue lagged): their events would only be swept. */
  firstDay: string;
  /** The sequence number of an erasure carried out ahead of its place, per identity key: earlier events are dropped. */
  erasedAt: ReadonlyMap<string, number>;
}

/** The player an event is of: its partner id's, else its device's (a folded device's number is its player's). */
export const identityOf = (event: QueuedEvent): string =>
  event.u !== null ? partnerKey(event.u) : deviceKey(event.d!);

/**
 * Applies a batch of event segments, in its named steps: `claims` (repeats of an event_id out), `numbers` (each
 * player's number, new players numbered), `raw` (the events kept, a document per day and player of each segment),
 * `activity` (the day's sets of each name, each chunk counting each segment once). Run again after a crash, each step
 * finds what it wrote and writes nothing twice.
 */
export async function applyBatch(deps: BatchDeps, step: Step, batch: Batch): Promise<void> {
  const { projectId, segments } = batch;
  const counted = await step("claims", () => Promise.all(segments.map((segment) => countable(deps, batch, segment))));
  const keys = new Set(counted.flatMap((events) => events.map(identityOf)));
  const numbers = await step("numbers", () => deps.numbers.assign(projectId, [...keys]));
  await step("raw", () =>
    Promise.all(segments.map((segment, i) => deps.raw.insert(projectId, segment.seq, rawBatches(counted[i])))),
  );
  const activity: SegmentActivity[] = await Promise.all(
    segments.map(async (segment, i) => ({
      seq: segment.seq,
      days: activityOf(counted[i], numbers, await deps.summed.summedAt(projectId, segment.seq)),
    })),
  );
  await step("activity", () => deps.activity.count(projectId, activity));
}

/** A segment's events that count: in the window, not of a player erased after them, not repeating an event_id. */
async function countable(deps: BatchDeps, batch: Batch, segment: EventsSegment): Promise<QueuedEvent[]> {
  const events = segment.work.events.filter((event) => {
    const erased = batch.erasedAt.get(identityOf(event));
    return dayOf(event.t) >= batch.firstDay && (erased === undefined || erased < segment.seq);
  });
  const claims = events.flatMap((event, index) => (event.i === null ? [] : [{ eventId: event.i, index }]));
  if (claims.length === 0) return events;
  const repeats = await deps.eventIds.claim(
    batch.projectId,
    { seq: segment.seq, earlier: segment.work.earlier },
    claims,
    segment.receivedAt,
  );
  return events.filter((_, index) => !repeats.has(index));
}

function rawBatches(events: readonly QueuedEvent[]): RawBatch[] {
  const batches = new Map<string, { day: string; identityKey: string; events: QueuedEvent[] }>();
  for (const event of events) {
    const day = dayOf(event.t);
    const identityKey = identityOf(event);
    const key = `${day} ${identityKey}`;
    const batch = batches.get(key) ?? batches.set(key, { day, identityKey, events: [] }).get(key)!;
    batch.events.push(event);
  }
  return [...batches.values()];
}

/** Per day, per name, each player's events and sums of the properties summed by then. */
function activityOf(
  events: readonly QueuedEvent[],
  numbers: ReadonlyMap<string, number>,
  summed: Awaited<ReturnType<SummedPropertyStore["summedAt"]>>,
): SegmentActivity["days"] {
  const days = new Map<string, Map<string, Map<number, PlayerActivity & { sums: Map<string, number> }>>>();
  for (const event of events) {
    const day = dayOf(event.t);
    const number = numbers.get(identityOf(event))!;
    const names = days.get(day) ?? days.set(day, new Map()).get(day)!;
    const players = names.get(event.n) ?? names.set(event.n, new Map()).get(event.n)!;
    const player = players.get(number) ?? players.set(number, { number, events: 0, sums: new Map() }).get(number)!;
    player.events++;
    for (const { id, property } of summed.get(event.n) ?? []) {
      const millionths = millionthsOf(event.p, property);
      if (millionths !== 0) player.sums.set(id, (player.sums.get(id) ?? 0) + millionths);
    }
  }
  return new Map(
    [...days].map(([day, names]) => [day, new Map([...names].map(([name, players]) => [name, [...players.values()]]))]),
  );
}
