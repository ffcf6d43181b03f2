import { randomUUID } from "node:crypto";
import type { Db } from "mongodb";
import { asUnavailable, isDuplicateKey } from "../../db/errors.js";
import { Gate, sideBySide } from "../../db/gate.js";
import type { Clock } from "../../clock.js";
import { UnavailableError } from "../../errors.js";
import type { SegmentHead, SegmentStore, SegmentWork } from "./segment-store.js";

/* The event queue: its counter and cursor (one document each), the writer that puts segments on it, its lag, and the
 * apply worker's lease on it (held on the cursor). */

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

/** Sequence numbers a writer tries before giving up (each loss means a worker tombstoned a stalled one). */
const ENQUEUE_ATTEMPTS = 5;

/** Puts work on the event queue: ingest calls, player changes, and the worker's own follow-ups. */
export class QueueWriter {
  private readonly listeners: (() => void)[] = [];

  constructor(private readonly options: { queue: QueueStateStore; segments: SegmentStore; clock: Clock }) {}

  /** Calls `listener` after each segment this writer queues (the apply worker of this process wakes). */
  onQueued(listener: () => void): void {
    this.listeners.push(listener);
  }

  /**
   * Queues `work` (carrying `count` events, the latest at `latest`) under a
   * new sequence number and answers it; on a loss to a tombstone, under the next.
   * `receivedAt`: the instant an ingest answers as its server_time, so freshness never claims a waiting event.
   */
  async enqueue(
    projectId: string,
    work: SegmentWork,
    count: number,
    latest: Date,
    receivedAt = this.options.clock.now(),
  ): Promise<number> {
    const { queue, segments } = this.options;
    for (let attempt = 0; attempt < ENQUEUE_ATTEMPTS; attempt++) {
      // The count joins the accepted total once, with the first sequence number.
      const seq = await queue.reserve(attempt === 0 ? count : 0);
      if (await segments.insert({ seq, projectId, receivedAt, count, work }, latest)) {
        for (const listener of this.listeners) listener();
        return seq;
      }
    }
    throw new UnavailableError("the event queue is stalled; nothing was queued, try again");
  }
}

export interface Lag {
  /** Age of the oldest accepted event behind the apply cursor; 0 when none waits. */
  seconds: number;
  /** Events in the segments behind the apply cursor. */
  depth: number;
}

/** Measures how far the apply worker is behind ingestion, from the database: right whichever instance applies. */
export class QueueLagMeter {
  private measuring: Promise<Lag> | undefined;
  /** The heads of segments behind the cursor, read once each (a segment is large; its head never changes). */
  private readonly heads = new Map<number, SegmentHead>();

  constructor(
    private readonly queue: QueueStateStore,
    private readonly segments: SegmentStore,
    private readonly clock: Clock,
  ) {}

  /**
   * Measures the lag now from the segments waiting behind the cursor and not
   * applied ahead of it (a sequence number whose writer died holds no events;
   * one not written yet holds none so far). Each segment's head is read once: segments never change.
   * Calls made while a measurement runs share it (a /metrics scrape asks three gauges at once).
   */
  measure(): Promise<Lag> {
    this.measuring ??= this.measureNow().finally(() => (this.measuring = undefined));
    return this.measuring;
  }

  private async measureNow(): Promise<Lag> {
    const state = await this.queue.read();
    // A segment applied ahead of the cursor waits no more: its events are counted already.
    const waiting = (await this.waitingHeads(state.applied, state.reserved)).filter(
      (head) => head.count > 0 && !state.ahead.has(head.seq),
    );
    const oldest = waiting.reduce((min, head) => Math.min(min, head.receivedAt.getTime()), Infinity);
    const seconds = waiting.length === 0 ? 0 : Math.max(0, (this.clock.now().getTime() - oldest) / 1000);
    return { seconds, depth: waiting.reduce((sum, head) => sum + head.count, 0) };
  }

  private async waitingHeads(applied: number, reserved: number): Promise<SegmentHead[]> {
    for (const seq of this.heads.keys()) if (seq <= applied) this.heads.delete(seq);
    const unread: number[] = [];
    for (let seq = applied + 1; seq <= reserved; seq++) if (!this.heads.has(seq)) unread.push(seq);
    for (const head of await sideBySide(unread, (seq) => this.segments.head(seq))) {
      if (head) this.heads.set(head.seq, head);
    }
    return [...this.heads.values()].filter((head) => head.seq <= reserved);
  }
}

/** How the lease stands after a pass asked for it. */
export type LeaseTaken =
  /** Held since the worker last had it, without a gap: no other worker applied anything meanwhile. */
  | "continued"
  /** Taken after it had run out (or on the first pass): another worker may have applied and stored plans since. */
  | "resumed"
  /** Another worker holds it. */
  | "refused";

/**
 * The apply worker's lease on the queue (one worker applies at a time). It is renewed once half of it has run, not
 * on every segment: no other worker can take it before it runs out, so the command a renewal costs is saved on most
 * segments.
 */
export class QueueLease {
  private readonly owner = randomUUID();
  /** Until when the lease runs, as this worker last took it; undefined when it does not hold it. */
  private until: Date | undefined;

  constructor(
    private readonly queue: QueueStateStore,
    private readonly leaseMs: number,
  ) {}

  /** Takes the lease, or renews it when half of it has run. */
  async take(now: Date): Promise<LeaseTaken> {
    if (this.until !== undefined && now.getTime() < this.until.getTime() - this.leaseMs / 2) return "continued";
    const until = new Date(now.getTime() + this.leaseMs);
    if (!(await this.queue.takeLease(this.owner, now, until))) {
      this.until = undefined;
      return "refused";
    }
    const lapsed = this.until === undefined || now >= this.until;
    this.until = until;
    return lapsed ? "resumed" : "continued";
  }

  /** Whether this worker still holds the lease at `now`: no other worker can have applied anything since it took it. */
  holds(now: Date): boolean {
    return this.until !== undefined && now < this.until;
  }

  async release(): Promise<void> {
    this.until = undefined;
    await this.queue.releaseLease(this.owner);
  }
}
