import type { Db, Filter } from "mongodb";
import { projectIdRange, projectScopedId } from "../../db/ids.js";
import { sequenceId } from "./segment-store.js";

/** A segment set aside after failing EVENT_PARK_AFTER_FAILURES times in a row: its project's queue went on without it. */
export interface ParkedSegment {
  projectId: string;
  seq: number;
  /** Events it carries (counted as applied while it is parked). */
  events: number;
  error: string;
  at: Date;
}

interface ParkedDoc {
  _id: string;
  project_id: string;
  seq: number;
  events: number;
  error: string;
  at: Date;
}

/**
 * The event_parked collection: one document a parked segment, `<project>/<seq>` (its segment is kept until it is
 * retried): what an admin lists and retries, a metric and `/readyz` count.
 */
export class ParkedStore {
  private readonly docs;

  constructor(db: Db) {
    this.docs = db.collection<ParkedDoc>("event_parked", { writeConcern: { w: "majority" } });
  }

  async park(segment: ParkedSegment): Promise<void> {
    const { projectId, seq, events, error, at } = segment;
    const doc = { project_id: projectId, seq, events, error, at };
    await this.docs.replaceOne({ _id: this.id(projectId, seq) }, doc, { upsert: true });
  }

  /** The parked segments of a project, or of every project (a collection of the few that failed: read whole). */
  async list(projectId?: string): Promise<ParkedSegment[]> {
    const filter = projectId === undefined ? {} : { _id: projectIdRange(projectId) };
    const docs = await this.docs
      .find(filter as Filter<ParkedDoc>)
      .sort({ _id: 1 })
      .toArray();
    return docs.map((doc) => ({
      projectId: doc.project_id,
      seq: doc.seq,
      events: doc.events,
      error: doc.error,
      at: doc.at,
    }));
  }

  async find(projectId: string, seq: number): Promise<ParkedSegment | null> {
    const doc = await this.docs.findOne({ _id: this.id(projectId, seq) });
    return doc && { projectId, seq, events: doc.events, error: doc.error, at: doc.at };
  }

  async remove(projectId: string, seq: number): Promise<void> {
    await this.docs.deleteOne({ _id: this.id(projectId, seq) });
  }

  private id(projectId: string, seq: number): string {
    return projectScopedId(projectId, sequenceId(seq));
  }
}
