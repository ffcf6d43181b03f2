import type { Db, Filter } from "mongodb";
import { isDuplicateKey } from "../../db/errors.js";
import { projectScopedId } from "../../db/ids.js";
import type { QueuedEvent } from "./entries.js";

/** A fold of a player into another: the identity keys that were its (its own first), and the player's. */
export interface FoldMove {
  from: string[];
  into: string;
}

/** What a queue segment asks the apply worker to do. */
export type SegmentWork =
  /** Accepted events of one ingest call (`earlier`: the parked segments they were queued in before). */
  | { kind: "events"; events: QueuedEvent[]; earlier?: number[] }
  /** Players folded (a device linked to its player): their activity moves, their later events are the player's. */
  | { kind: "fold"; moves: FoldMove[] }
  /** Players erased: their activity and raw events go, and their events queued before it are dropped. */
  | { kind: "erase"; identityKeys: string[] }
  /**
   * A property starts being summed (id: SummedProperty.id): the events before it are back-filled, in steps; a step
   * after the first (`after`: the day the step before counted through) is queued by the worker.
   */
  | { kind: "sum"; id: string; after?: string };

/** Folds and erasures: carried out before the events queued ahead of them (they concern players, not events). */
export const isControl = (work: SegmentWork | null): boolean => work?.kind === "fold" || work?.kind === "erase";

export interface Segment {
  seq: number;
  projectId: string;
  receivedAt: Date;
  /** Events it carries (0 for other work). */
  count: number;
  /** Null on a tombstone: a sequence number whose writer never wrote it. */
  work: SegmentWork | null;
}

export type SegmentHead = Omit<Segment, "work">;

/** A sequence number as 16 digits: string order is sequence order, and FerretDB indexes only string `_id`s. */
export const sequenceId = (seq: number): string => String(seq).padStart(16, "0");

type PackedEvent = [string, string | null, string | null, number, string | null, string | null];

/** Events as stored: one JSON string of rows (FerretDB decodes a document field by field: 30 ms for 500 objects). */
type StoredWork = Exclude<SegmentWork, { kind: "events" }> | { kind: "events"; packed: string; earlier?: number[] };

interface SegmentDoc {
  _id: string;
  project_id: string;
  received_at: Date;
  count: number;
  work: StoredWork | null;
}

export const packEvents = (events: readonly QueuedEvent[]): string =>
  JSON.stringify(events.map((e): PackedEvent => [e.n, e.u, e.d, e.t.getTime(), e.i, e.p]));

export const unpackEvents = (packed: string): QueuedEvent[] =>
  (JSON.parse(packed) as PackedEvent[]).map(([n, u, d, t, i, p]) => ({ n, u, d, t: new Date(t), i, p }));

const stored = (work: SegmentWork | null): StoredWork | null =>
  work?.kind === "events"
    ? { kind: "events", packed: packEvents(work.events), ...(work.earlier && { earlier: work.earlier }) }
    : work;

const workOf = (work: StoredWork | null): SegmentWork | null =>
  work?.kind === "events"
    ? { kind: "events", events: unpackEvents(work.packed), ...(work.earlier && { earlier: work.earlier }) }
    : work;

/**
 * The event_segments collection: each project's queue of work for the apply worker, `_id` `<project>/<seq>`, so the
 * worker finds the next by `_id`. A segment is deleted once applied; its events are kept apart (event_raw).
 */
export class SegmentStore {
  private readonly segments;

  constructor(db: Db) {
    this.segments = db.collection<SegmentDoc>("event_segments", { writeConcern: { w: "majority" } });
  }

  /** False when the sequence number is taken (a tombstone got there first). */
  async insert(segment: Segment): Promise<boolean> {
    try {
      await this.segments.insertOne({
        _id: this.id(segment.projectId, segment.seq),
        project_id: segment.projectId,
        received_at: segment.receivedAt,
        count: segment.count,
        work: stored(segment.work),
      });
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  async find(projectId: string, seq: number): Promise<Segment | null> {
    const doc = await this.segments.findOne({ _id: this.id(projectId, seq) });
    return doc && { seq, projectId, receivedAt: doc.received_at, count: doc.count, work: workOf(doc.work) };
  }

  /** A segment without its work (which can be large): when it came, how many events. */
  async head(projectId: string, seq: number): Promise<SegmentHead | null> {
    const doc = await this.segments.findOne(
      { _id: this.id(projectId, seq) },
      { projection: { received_at: 1, count: 1 } },
    );
    return doc && { seq, projectId, receivedAt: doc.received_at, count: doc.count };
  }

  /** The events of the project's segments from `from` through `to` still queued (not yet applied). */
  async *queuedEvents(projectId: string, from: number, to: number): AsyncGenerator<QueuedEvent[]> {
    const range = { $gte: this.id(projectId, from), $lte: this.id(projectId, to) };
    for await (const doc of this.segments.find({ _id: range } as Filter<SegmentDoc>).sort({ _id: 1 })) {
      const work = workOf(doc.work);
      if (work?.kind === "events") yield work.events;
    }
  }

  /** Closes a gap a crashed writer left; false when the writer's segment is there after all. */
  insertTombstone(projectId: string, seq: number, now: Date): Promise<boolean> {
    return this.insert({ seq, projectId, receivedAt: now, count: 0, work: null });
  }

  /** Deletes applied segments, each by `_id` (a delete by a range scans on FerretDB), in one command. */
  async deleteApplied(projectId: string, seqs: readonly number[]): Promise<void> {
    if (seqs.length === 0) return;
    await this.segments.bulkWrite(
      seqs.map((seq) => ({ deleteOne: { filter: { _id: this.id(projectId, seq) } } })),
      { ordered: false },
    );
  }

  private id(projectId: string, seq: number): string {
    return projectScopedId(projectId, sequenceId(seq));
  }
}
