import type { Db } from "mongodb";
import { asUnavailable, isDuplicateKey } from "../../db/errors.js";
import { Gate } from "../../db/gate.js";

interface CounterDoc {
  _id: "counter";
  /** The last sequence number handed out. */
  seq: number;
  /** Events accepted, in all. */
  events: number;
}

interface CursorDoc {
  _id: "cursor";
  /** Every segment up to this one is applied. */
  applied: number;
  /** Segments past `applied` applied ahead of it (an earlier one's project was set aside). */
  ahead: number[];
  /** Every segment up to this one has its history changes written (the rest are in their plans); absent: `applied`. */
  written?: number;
  /** Events applied, in all. */
  events: number;
  /** The worker allowed to apply, until lease_until. */
  owner: string | null;
  lease_until: Date;
}

export interface QueueState {
  reserved: number;
  accepted: number;
  applied: number;
  /** Segments past `applied` that are applied in full too. */
  ahead: ReadonlySet<number>;
  /** Every segment through this one has its player history changes written (the owner writes them behind). */
  written: number;
  appliedEvents: number;
}

/** The event_queue collection: the sequence counter ingest draws from, and the apply cursor with its lease. */
export class QueueStateStore {
  private readonly docs;
  /**
   * One reservation at a time: FerretDB loses concurrent updates of one
   * document (measured: 40 reservations side by side drew 30 distinct numbers
   * and counted 300 of 400 events), and one process owns a FerretDB database.
   * A reservation waits its turn at most a database deadline, and none waits
   * on once the one ahead found the database unavailable: queued one behind
   * another, 20 ingests in a frozen engine answered after 2, 4, ... 40 s.
   */
  private readonly counter = new Gate(1, asUnavailable);

  constructor(
    db: Db,
    private readonly waitLimitMs?: number,
  ) {
    this.docs = db.collection<CounterDoc | CursorDoc>("event_queue");
  }

  async ensure(): Promise<void> {
    const initial: (CounterDoc | CursorDoc)[] = [
      { _id: "counter", seq: 0, events: 0 },
      { _id: "cursor", applied: 0, ahead: [], events: 0, owner: null, lease_until: new Date(0) },
    ];
    for (const doc of initial) {
      try {
        await this.docs.insertOne(doc);
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
    }
  }

  /** The next sequence number; `events` are added to the accepted count. */
  async reserve(events: number): Promise<number> {
    const doc = (await this.counter.run(
      () =>
        this.docs.findOneAndUpdate(
          { _id: "counter" },
          { $inc: { seq: 1, events } },
          { returnDocument: "after", upsert: true },
        ),
      { waitLimitMs: this.waitLimitMs },
    )) as CounterDoc | null;
    return doc!.seq;
  }

  /** Both documents in one command (the collection holds only these two, so FerretDB's scan for `$in` is short). */
  async read(): Promise<QueueState> {
    const docs = await this.docs.find({ _id: { $in: ["counter", "cursor"] } }).toArray();
    const counter = docs.find((doc): doc is CounterDoc => doc._id === "counter");
    const cursor = docs.find((doc): doc is CursorDoc => doc._id === "cursor");
    return {
      reserved: counter?.seq ?? 0,
      accepted: counter?.events ?? 0,
      applied: cursor?.applied ?? 0,
      ahead: new Set(cursor?.ahead ?? []),
      written: cursor?.written ?? cursor?.applied ?? 0,
      appliedEvents: cursor?.events ?? 0,
    };
  }

  /** Takes or renews the lease when it is free, expired or already `owner`'s; false when another worker holds it. */
  async takeLease(owner: string, now: Date, until: Date): Promise<boolean> {
    const result = await this.docs.updateOne(
      { _id: "cursor", $or: [{ owner }, { lease_until: { $lt: now } }] },
      { $set: { owner, lease_until: until } },
    );
    return result.matchedCount === 1;
  }

  async releaseLease(owner: string): Promise<void> {
    await this.docs.updateOne({ _id: "cursor", owner }, { $set: { owner: null, lease_until: new Date(0) } });
  }

  /**
   * Records segment `seq`, past the cursor, as applied in full. A stale worker's
   * mark after the cursor passed `seq` is refused: the list holds only segments ahead.
   */
  async markAhead(seq: number): Promise<void> {
    await this.docs.updateOne({ _id: "cursor", applied: { $lt: seq } }, { $addToSet: { ahead: seq } });
  }

  /**
   * Moves the cursor from `seq - 1` to `seq`, with every segment through `written` having its history changes
   * written; false when another worker moved it (the segment is applied anyway).
   */
  async advance(seq: number, events: number, written: number): Promise<boolean> {
    const result = await this.docs.updateOne(
      { _id: "cursor", applied: seq - 1 },
      { $set: { applied: seq, written }, $inc: { events }, $pull: { ahead: seq } },
    );
    return result.modifiedCount === 1;
  }

  /** Every segment through `seq` (applied) has its history changes written. */
  async markWritten(seq: number): Promise<void> {
    await this.docs.updateOne({ _id: "cursor", applied: { $gte: seq } }, { $set: { written: seq } });
  }
}
