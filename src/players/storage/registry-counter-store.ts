import type { Db } from "mongodb";
import { isDuplicateKey } from "../../db/errors.js";

/** Per project: how many tags and trait keys are registered, and the last tag id handed out. */
interface RegistryCounterDoc {
  _id: string;
  tag_count: number;
  trait_key_count: number;
  last_tag_id: number;
}

/**
 * The player_registry_counters collection, `_id` the project id: the count
 * guards that hold the project limits. Each guard sits in the filter of one
 * update, which MongoDB applies atomically.
 */
export class RegistryCounterStore {
  private readonly counters;
  /** Projects whose counter document exists (it is never deleted): a reservation needs no upsert first. */
  private readonly ensured = new Set<string>();

  constructor(db: Db) {
    this.counters = db.collection<RegistryCounterDoc>("player_registry_counters");
  }

  async read(projectId: string): Promise<{ tags: number; traitKeys: number }> {
    const doc = await this.counters.findOne({ _id: projectId });
    if (doc) this.ensured.add(projectId);
    return { tags: doc?.tag_count ?? 0, traitKeys: doc?.trait_key_count ?? 0 };
  }

  /** Takes `n` tag slots if that keeps the project within `limit`; the first of `n` fresh tag ids, or null. */
  async reserveTagSlots(projectId: string, n: number, limit: number): Promise<number | null> {
    await this.ensureCounter(projectId);
    const doc = await this.counters.findOneAndUpdate(
      { _id: projectId, tag_count: { $lte: limit - n } },
      { $inc: { tag_count: n, last_tag_id: n } },
      { returnDocument: "after" },
    );
    return doc ? doc.last_tag_id - n + 1 : null;
  }

  async reserveTraitKeySlots(projectId: string, n: number, limit: number): Promise<boolean> {
    await this.ensureCounter(projectId);
    const result = await this.counters.updateOne(
      { _id: projectId, trait_key_count: { $lte: limit - n } },
      { $inc: { trait_key_count: n } },
    );
    return result.modifiedCount === 1;
  }

  async releaseSlots(projectId: string, tags: number, traitKeys: number): Promise<void> {
    if (tags === 0 && traitKeys === 0) return;
    await this.counters.updateOne({ _id: projectId }, { $inc: { tag_count: -tags, trait_key_count: -traitKeys } });
  }

  /** Every project's counts (one document per project that ever registered a name). */
  async all(): Promise<{ projectId: string; tags: number; traitKeys: number }[]> {
    const docs = await this.counters.find({}).toArray();
    return docs.map((doc) => ({ projectId: doc._id, tags: doc.tag_count, traitKeys: doc.trait_key_count }));
  }

  /** Sets the counts (the repair pass); the last tag id stays, so ids are never handed out twice. */
  async setCounts(projectId: string, counts: { tags: number; traitKeys: number }): Promise<void> {
    await this.counters.updateOne(
      { _id: projectId },
      { $set: { tag_count: counts.tags, trait_key_count: counts.traitKeys } },
    );
  }

  private async ensureCounter(projectId: string): Promise<void> {
    if (this.ensured.has(projectId)) return;
    try {
      await this.counters.updateOne(
        { _id: projectId },
        { $setOnInsert: { tag_count: 0, trait_key_count: 0, last_tag_id: 0 } },
        { upsert: true },
      );
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
    this.ensured.add(projectId);
  }
}
