import { deleteStep } from "../delete-step.js";
import type { Db } from "mongodb";
import { isDuplicateKey } from "../../db/errors.js";
import type { QueuedEvent } from "./entries.js";

/** What a queue segment asks the apply worker to do. */
export type SegmentWork =
  /** Accepted events of one ingest call. */
  | { kind: "events"; events: QueuedEvent[] }
  /**
   * Players written (tags or traits changed): their history follows their
   * cohorts as of now; a folded profile's history (a device's, a former
   * partner id's) moves to the player it was folded into.
   */
  | {
      kind: "resync";
      identityKeys: string[];
      folds?: { from: string; into: string }[];
      /** The stamp of the changed players (changed-players.ts) this settles once applied. */
      change?: string;
      /** Players erased: their histories leave every count and their raw events before this segment are deleted. */
      erased?: string[];
    }
  /** A trait key turns on: its holders' histories move into its cohorts. */
  | { kind: "materialise"; key: string }
  /**
   * A property starts being summed (id: SummedProperty.id): the events before it are back-filled, in steps; a step
   * after the first (`after`: the segment the step before counted through) is queued by the worker.
   */
  | { kind: "sum"; id: string; after?: number };

export interface Segment {
  seq: number;
  projectId: string | null;
  receivedAt: Date;
  /** Events it carries (0 for other work). */
  count: number;
  work: SegmentWork | null;
}

export type SegmentHead = Omit<Segment, "work">;

/** An event's place in the queue: its segment, and its index there. */
export interface EventPosition {
  seq: number;
  index: number;
}

/**
 * A segment's (and its plan's) `_id`: the sequence number as 16 digits. A
 * string, because FerretDB uses its `_id` index only for a string or ObjectId
 * (a number `_id` scans the collection: 9 s a lookup among 200 segments);
 * zero-padded, so that string order is sequence order.
 */
export function sequenceId(seq: number): string {
  return String(seq).padStart(16, "0");
}

/**
 * Events as stored: one JSON string of `[n, u, d, t (ms), i, p]` rows. FerretDB 1.24 decodes a document field by
 * field with its types, so 500 events as objects cost 30 ms to insert and again to read (measured); as one string, a
 * few.
 */
export type StoredWork = Exclude<SegmentWork, { kind: "events" }> | { kind: "events"; packed: string };

/** Segments an erasure reads at a time (each at most an ingest call's events). */
const ERASE_BATCH = 50;

type PackedEvent = [string, string | null, string | null, number, string | null, string | null];

function storedWork(work: SegmentWork | null): StoredWork | null {
  if (work?.kind !== "events") return work;
  const rows: PackedEvent[] = work.events.map((e) => [e.n, e.u, e.d, e.t.getTime(), e.i, e.p]);
  return { kind: "events", packed: JSON.stringify(rows) };
}

/** The work of a stored segment (see StoredWork). */
export function workOf(stored: StoredWork | null): SegmentWork | null {
  if (stored?.kind !== "events") return stored;
  const rows = JSON.parse(stored.packed) as PackedEvent[];
  return { kind: "events", events: rows.map(([n, u, d, t, i, p]) => ({ n, u, d, t: new Date(t), i, p })) };
}

interface SegmentDoc {
  _id: string;
  /** Null on a tombstone: a sequence number whose writer never wrote it. */
  project_id: string | null;
  received_at: Date;
  count: number;
  /** The latest event time in it: retention deletes a segment once this is out of the window. */
  latest: Date;
  work: StoredWork | null;
}

/**
 * The event_segments collection: the queue of work for the apply worker and
 * the raw events, one document per ingest call (or per tag change or fold),
 * addressed by its sequence number, so the worker finds the next by `_id`.
 */
export class SegmentStore {
  private readonly segments;

  constructor(db: Db) {
    this.segments = db.collection<SegmentDoc>("event_segments");
  }

  /** False when the sequence number is taken (a tombstone got there first). */
  async insert(segment: Segment, latest: Date): Promise<boolean> {
    try {
      await this.segments.insertOne({
        _id: sequenceId(segment.seq),
        project_id: segment.projectId,
        received_at: segment.receivedAt,
        count: segment.count,
        latest,
        work: storedWork(segment.work),
      });
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  async find(seq: number): Promise<Segment | null> {
    const doc = await this.segments.findOne({ _id: sequenceId(seq) });
    return (
      doc && {
        seq,
        projectId: doc.project_id,
        receivedAt: doc.received_at,
        count: doc.count,
        work: workOf(doc.work),
      }
    );
  }

  /** A segment without its work (which can be large): whose it is, when it came, how many events. */
  async head(seq: number): Promise<SegmentHead | null> {
    const doc = await this.segments.findOne(
      { _id: sequenceId(seq) },
      { projection: { project_id: 1, received_at: 1, count: 1 } },
    );
    return doc && { seq, projectId: doc.project_id, receivedAt: doc.received_at, count: doc.count };
  }

  /**
   * Visits the events of the project's segments after `after` and before `before` still kept (the raw events), in
   * order, with each one's sequence number, until `visit` answers false: a step of a sum's back-fill. True when it
   * visited them all.
   */
  async forEachEventBetween(
    projectId: string,
    after: number,
    before: number,
    visit: (seq: number, events: readonly QueuedEvent[]) => Promise<boolean>,
  ): Promise<boolean> {
    const range = { $gt: sequenceId(after), $lt: sequenceId(before) };
    const docs = this.segments.find({ project_id: projectId, _id: range, "work.kind": "events" }).sort({ _id: 1 });
    for await (const doc of docs) {
      const work = workOf(doc.work);
      if (work?.kind === "events" && !(await visit(Number(doc._id), work.events))) {
        await docs.close();
        return false;
      }
    }
    return true;
  }

  /**
   * Deletes from the project's segments before `before` the raw events `erased` picks (an erasure), ERASE_BATCH
   * segments read at a time, no cursor left open across the writes. Run again after a crash, it finds nothing more.
   */
  async deleteEvents(projectId: string, before: number, erased: (event: QueuedEvent) => boolean): Promise<void> {
    for (let after = 0; ;) {
      const range = { $gt: sequenceId(after), $lt: sequenceId(before) };
      const docs = await this.segments
        .find({ project_id: projectId, _id: range, "work.kind": "events" })
        .sort({ _id: 1 })
        .limit(ERASE_BATCH)
        .toArray();
      for (const doc of docs) {
        const work = workOf(doc.work);
        const events = work?.kind === "events" ? work.events : [];
        const kept = events.filter((event) => !erased(event));
        if (kept.length === events.length) continue;
        await this.segments.updateOne(
          { _id: doc._id },
          { $set: { work: storedWork({ kind: "events", events: kept }) } },
        );
      }
      if (docs.length < ERASE_BATCH) return;
      after = Number(docs.at(-1)!._id);
    }
  }

  /**
   * A page of the raw events `pick` selects among the project's kept segments, from event `from.index` of segment
   * `from.seq` on, in queue order: at most `limit` events and `segments` segments read, one in memory at a time. Where
   * the next page starts, or null once every kept segment was read.
   */
  async pickEvents(
    projectId: string,
    from: EventPosition,
    pick: (event: QueuedEvent) => boolean,
    { limit, segments }: { limit: number; segments: number },
  ): Promise<{ events: QueuedEvent[]; next: EventPosition | null }> {
    const filter = { project_id: projectId, _id: { $gte: sequenceId(from.seq) }, "work.kind": "events" };
    const docs = this.segments.find(filter).sort({ _id: 1 }).limit(segments);
    const events: QueuedEvent[] = [];
    let read = 0;
    let last = from.seq - 1;
    for await (const doc of docs) {
      read++;
      last = Number(doc._id);
      const work = workOf(doc.work);
      const all = work?.kind === "events" ? work.events : [];
      for (let index = last === from.seq ? from.index : 0; index < all.length; index++) {
        if (!pick(all[index])) continue;
        events.push(all[index]);
        if (events.length === limit) {
          await docs.close();
          return { events, next: { seq: last, index: index + 1 } };
        }
      }
    }
    return { events, next: read === segments ? { seq: last + 1, index: 0 } : null };
  }

  /** Closes a gap a crashed writer left; false when the writer's segment is there after all. */
  insertTombstone(seq: number, now: Date): Promise<boolean> {
    return this.insert({ seq, projectId: null, receivedAt: now, count: 0, work: null }, new Date(0));
  }

  /** Deletes applied segments whose every event is older than `before`. A periodic sweep: it scans. */
  async deleteExpired(before: Date, appliedThrough: number, limit: number): Promise<number> {
    const filter = { _id: { $lte: sequenceId(appliedThrough) }, latest: { $lt: before } };
    return (await deleteStep(this.segments, filter, limit)).length;
  }
}
