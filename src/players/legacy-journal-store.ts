import type { Db } from "mongodb";
import type { RoundMembership } from "./membership-repair.js";

interface JournalDoc {
  _id: string;
  project_id: string;
  identity_keys: string[];
  tags: string[];
  started_at: Date;
}

/**
 * The player_membership_journal collection: where earlier versions wrote a
 * document per round before its profiles and removed it once its membership
 * was written. A round's recorded change (PlayerChangeStore) does that now;
 * the start-up repair completes what a crash of an earlier version left
 * here, then removes it, and nothing writes here any more.
 */
export class LegacyJournalStore {
  private readonly journal;

  constructor(db: Db) {
    this.journal = db.collection<JournalDoc>("player_membership_journal");
  }

  /** Rounds begun before `before` and never ended, with their document ids. */
  async pending(before: Date): Promise<(RoundMembership & { id: string })[]> {
    const docs = await this.journal.find({ started_at: { $lt: before } }).toArray();
    return docs.map((doc) => ({
      id: doc._id,
      projectId: doc.project_id,
      identityKeys: doc.identity_keys,
      tags: doc.tags,
    }));
  }

  /** Removes completed rounds; every round without `ids` (a full rebuild covers them all). */
  async remove(ids?: readonly string[]): Promise<void> {
    await this.journal.deleteMany(ids ? { _id: { $in: [...ids] } } : {});
  }
}
