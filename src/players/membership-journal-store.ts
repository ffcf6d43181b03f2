import { randomUUID } from "node:crypto";
import type { Db } from "mongodb";

interface JournalDoc {
  _id: string;
  project_id: string;
  identity_keys: string[];
  tags: string[];
  started_at: Date;
}

/** A write in progress: the players whose membership of `tags` it may leave behind their profiles. */
export interface PendingWrite {
  id: string;
  projectId: string;
  identityKeys: string[];
  tags: string[];
  startedAt: Date;
}

/**
 * The player_membership_journal collection: a document per update round,
 * written before its profiles and removed once their membership and counts
 * are written. What is left after a crash names what the repair pass must
 * re-derive; an empty collection means membership matches the profiles.
 */
export class MembershipJournalStore {
  private readonly journal;

  constructor(db: Db) {
    this.journal = db.collection<JournalDoc>("player_membership_journal");
  }

  async begin(projectId: string, identityKeys: string[], tags: string[], now: Date): Promise<string> {
    const id = randomUUID();
    await this.journal.insertOne({
      _id: id,
      project_id: projectId,
      identity_keys: identityKeys,
      tags,
      started_at: now,
    });
    return id;
  }

  async end(id: string): Promise<void> {
    await this.journal.deleteOne({ _id: id });
  }

  /** Forgets every round (a full rebuild covers them all). */
  async endAll(): Promise<void> {
    await this.journal.deleteMany({});
  }

  /** Rounds begun before `before` and never ended; the collection is empty but for crashed or running rounds. */
  async pending(before: Date): Promise<PendingWrite[]> {
    const docs = await this.journal.find({ started_at: { $lt: before } }).toArray();
    return docs.map((doc) => ({
      id: doc._id,
      projectId: doc.project_id,
      identityKeys: doc.identity_keys,
      tags: doc.tags,
      startedAt: doc.started_at,
    }));
  }
}
