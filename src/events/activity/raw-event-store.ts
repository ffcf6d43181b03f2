import type { Db, Filter } from "mongodb";
import { type Engine, throwIfRefused } from "../../db/engine.js";
import { isDuplicateKeyCode } from "../../db/errors.js";
import { idPart, prefixRange, projectScopedId } from "../../db/ids.js";
import type { QueuedEvent } from "../queue/entries.js";
import { packEvents, sequenceId, unpackEvents } from "../queue/segment-store.js";

interface RawDoc {
  _id: string;
  project_id: string;
  /** The events as one JSON string of rows: FerretDB decodes a document field by field. */
  events: string;
  /** When the day leaves the retention window: a TTL index removes it (the worker's sweep where there is none). */
  expire_at: Date;
}

/** The raw events of one player on one day in one segment. */
export interface RawBatch {
  day: string;
  identityKey: string;
  events: readonly QueuedEvent[];
}

/**
 * The raw events applied (`event_raw`), a document per day, player and queue segment, `_id`
 * `<project>/<day>/<identity key>/<seq>`: a player's events of a day are one indexed range of `_id` (an erasure, a
 * player's data), a day's are another (the retention sweep, a sum's back-fill), on both engines. Written by the apply
 * worker once per segment (a repeat is a duplicate key, left as it is).
 */
export class RawEventStore {
  private readonly docs;

  constructor(
    db: Db,
    private readonly engine: Engine,
    private readonly retentionDays: number,
  ) {
    this.docs = db.collection<RawDoc>("event_raw");
  }

  async createIndexes(): Promise<void> {
    if (this.engine.ttlIndexes) await this.docs.createIndex({ expire_at: 1 }, { expireAfterSeconds: 0 });
  }

  async insert(projectId: string, seq: number, batches: readonly RawBatch[]): Promise<void> {
    const operations = batches.map(({ day, identityKey, events }) => ({
      insertOne: {
        document: {
          _id: `${playerDay(projectId, day, identityKey)}${sequenceId(seq)}`,
          project_id: projectId,
          events: packEvents(events),
          expire_at: new Date(Date.parse(`${day}T00:00:00.000Z`) + this.retentionDays * 86_400_000),
        },
      },
    }));
    const failures = await this.engine.writeAll(this.docs, operations);
    throwIfRefused(
      "raw events",
      failures.filter((failure) => !isDuplicateKeyCode(failure.code)),
    );
  }

  /** A player's raw events of each of `days`, a day at a time, in queue order. */
  async *ofPlayer(projectId: string, identityKey: string, days: readonly string[]): AsyncGenerator<QueuedEvent[]> {
    for (const day of days) {
      const docs = await this.docs
        .find({ _id: prefixRange(playerDay(projectId, day, identityKey)) })
        .sort({ _id: 1 })
        .toArray();
      if (docs.length > 0) yield docs.flatMap(eventsOf);
    }
  }

  /**
   * The raw events of `days`, a day after another in their order, a document (a player's of a day in a segment) at a
   * time: one range of `_id` a day, as a find without a sort answers in no order of `_id` on every engine.
   */
  async *ofDays(
    projectId: string,
    days: readonly string[],
  ): AsyncGenerator<{ day: string; seq: number; events: QueuedEvent[] }> {
    for (const day of days) {
      for await (const doc of this.docs.find({ _id: prefixRange(projectScopedId(projectId, `${day}/`)) })) {
        yield { day, seq: Number(doc._id.slice(-16)), events: eventsOf(doc) };
      }
    }
  }

  /** Deletes the raw events of `identityKeys` on `days` (an erasure). */
  async deleteOf(projectId: string, identityKeys: readonly string[], days: readonly string[]): Promise<void> {
    for (const day of days) {
      for (const key of identityKeys) await this.deleteIn(prefixRange(playerDay(projectId, day, key)), Infinity);
    }
  }

  /** One step of the retention sweep of a day: at most `limit` documents; the number found. */
  async deleteDay(projectId: string, day: string, limit: number): Promise<number> {
    return this.deleteIn(prefixRange(projectScopedId(projectId, `${day}/`)), limit);
  }

  /**
   * Deletes up to `limit` documents of an `_id` range, found by the range and deleted by `_id` (a delete by a range
   * scans on FerretDB 1.24, measured; a find by it does not).
   */
  private async deleteIn(range: { $gte: string; $lt: string }, limit: number): Promise<number> {
    const filter = { _id: range } as Filter<RawDoc>;
    const found = await this.docs
      .find(filter, { projection: { _id: 1 }, ...(limit < Infinity && { limit }) })
      .toArray();
    const operations = found.map(({ _id }) => ({ deleteOne: { filter: { _id } } }));
    throwIfRefused("raw events", await this.engine.writeAll(this.docs, operations));
    return found.length;
  }
}

/** The `_id` prefix of a player's documents of a day (the key escaped: it may hold any character, `/` among them). */
const playerDay = (projectId: string, day: string, identityKey: string) =>
  projectScopedId(projectId, `${day}/${idPart(identityKey)}/`);

const eventsOf = (doc: RawDoc): QueuedEvent[] => unpackEvents(doc.events);
