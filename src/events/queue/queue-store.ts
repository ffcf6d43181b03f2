import type { Db, Filter } from "mongodb";
import type { KeyedLock } from "../../db/keyed-lock.js";

/** A project's queue (its partition of the apply): `event_queues`, `_id` the project. */
interface QueueDoc {
  _id: string;
  /** The last sequence number handed out. */
  seq: number;
  /** Every segment through this one is applied (or parked). */
  applied: number;
  /** Folds and erasures queued past `applied`, carried out before the events ahead of them... */
  controls: number[];
  /** ...and those of them carried out already. */
  ahead: number[];
  /** The worker allowed to apply, until `until`; `epoch` grows with each new holder, fencing an old one's writes. */
  owner: string | null;
  until: Date;
  epoch: number;
  /** The segment after `applied` failing, and how often in a row. */
  failing: { seq: number; count: number } | null;
}

export interface QueueState {
  projectId: string;
  reserved: number;
  applied: number;
  controls: readonly number[];
  ahead: ReadonlySet<number>;
  epoch: number;
  failing: { seq: number; count: number } | null;
}

/** A lease on a project's queue as taken: its epoch, or null when another worker holds it. */
export type TakenLease = { epoch: number; resumed: boolean } | null;

const stateOf = (doc: QueueDoc | null, projectId: string): QueueState => ({
  projectId,
  reserved: doc?.seq ?? 0,
  applied: doc?.applied ?? 0,
  controls: doc?.controls ?? [],
  ahead: new Set(doc?.ahead ?? []),
  epoch: doc?.epoch ?? 0,
  failing: doc?.failing ?? null,
});

/**
 * The queues of every project, one document each: the sequence numbers ingest draws from, the apply cursor, the
 * lease on it and what failed. Every write the queue's correctness rests on names the lease's holder and epoch, so a
 * paused holder that wakes after another took over writes nothing; `majority` write concern where the server has one.
 */
export class QueueStore {
  private readonly docs;

  constructor(
    db: Db,
    private readonly locks: KeyedLock,
  ) {
    this.docs = db.collection<QueueDoc>("event_queues", { writeConcern: { w: "majority" } });
  }

  /** The next sequence number of the project. */
  async reserve(projectId: string): Promise<number> {
    const doc = await this.writing(projectId, () =>
      this.docs.findOneAndUpdate(
        { _id: projectId },
        { $inc: { seq: 1 }, $setOnInsert: initial() },
        { upsert: true, returnDocument: "after" },
      ),
    );
    return doc!.seq;
  }

  async read(projectId: string): Promise<QueueState> {
    return stateOf(await this.docs.findOne({ _id: projectId }), projectId);
  }

  /** Every project's queue (one document a project: bounded by the number of projects). */
  async readAll(): Promise<QueueState[]> {
    return (await this.docs.find({}).toArray()).map((doc) => stateOf(doc, doc._id));
  }

  /** A fold or erasure queued at `seq`: the worker carries it out before the events ahead of it. */
  async addControl(projectId: string, seq: number): Promise<void> {
    await this.writing(projectId, () =>
      this.docs.updateOne({ _id: projectId, applied: { $lt: seq } }, { $addToSet: { controls: seq } }),
    );
  }

  /** Takes or renews the lease when it is free, expired or `owner`'s; a new holder bumps the epoch. */
  takeLease(projectId: string, owner: string, now: Date, until: Date): Promise<TakenLease> {
    return this.writing(projectId, async () => {
      const renewed = await this.docs.findOneAndUpdate(
        { _id: projectId, owner, until: { $gte: now } },
        { $set: { until } },
        { returnDocument: "after" },
      );
      if (renewed) return { epoch: renewed.epoch, resumed: false };
      const taken = await this.docs.findOneAndUpdate(
        { _id: projectId, $or: [{ owner: null }, { until: { $lt: now } }] } as Filter<QueueDoc>,
        { $set: { owner, until }, $inc: { epoch: 1 } },
        { returnDocument: "after" },
      );
      return taken ? { epoch: taken.epoch, resumed: true } : null;
    });
  }

  async releaseLease(projectId: string, owner: string, epoch: number): Promise<void> {
    await this.writing(projectId, () =>
      this.docs.updateOne({ _id: projectId, owner, epoch }, { $set: { owner: null, until: new Date(0) } }),
    );
  }

  /** A control segment past the cursor is carried out; false when the lease moved on. */
  async markAhead(projectId: string, seq: number, epoch: number): Promise<boolean> {
    const result = await this.writing(projectId, () =>
      this.docs.updateOne({ _id: projectId, epoch, applied: { $lt: seq } }, { $addToSet: { ahead: seq } }),
    );
    return result.matchedCount === 1;
  }

  /** Moves the cursor from `from - 1` through `to`; false when the lease moved on. */
  async advance(projectId: string, from: number, to: number, epoch: number): Promise<boolean> {
    const passed = Array.from({ length: to - from + 1 }, (_, i) => from + i);
    const result = await this.writing(projectId, () =>
      this.docs.updateOne(
        { _id: projectId, epoch, applied: from - 1 },
        { $set: { applied: to, failing: null }, $pullAll: { controls: passed, ahead: passed } },
      ),
    );
    return result.matchedCount === 1;
  }

  /** The apply of segment `seq` failed once more: how often in a row now. */
  failed(projectId: string, seq: number, epoch: number): Promise<number> {
    return this.writing(projectId, async () => {
      const doc = await this.docs.findOne({ _id: projectId });
      const count = doc?.failing?.seq === seq ? doc.failing.count + 1 : 1;
      await this.docs.updateOne({ _id: projectId, epoch }, { $set: { failing: { seq, count } } });
      return count;
    });
  }

  /** Moves the cursor past segment `seq`, parked: its events are applied when it is retried. */
  async passParked(projectId: string, seq: number, epoch: number): Promise<boolean> {
    const result = await this.writing(projectId, () =>
      this.docs.updateOne(
        { _id: projectId, epoch, applied: seq - 1 },
        { $set: { applied: seq, failing: null }, $pullAll: { controls: [seq], ahead: [seq] } },
      ),
    );
    return result.matchedCount === 1;
  }

  /**
   * A write of the project's document, one at a time in this process: FerretDB applies an update as a read and a
   * write, so two at once lose one (an ingest's `$inc` undid an advance of the cursor).
   */
  private writing<T>(projectId: string, write: () => Promise<T>): Promise<T> {
    return this.locks.run([`queue/${projectId}`], write);
  }
}

const initial = () => ({
  applied: 0,
  controls: [],
  ahead: [],
  owner: null,
  until: new Date(0),
  epoch: 0,
  failing: null,
});
