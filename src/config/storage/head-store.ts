import type { Db } from "mongodb";
import { isDuplicateKey } from "../../db/errors.js";

interface HeadDoc {
  _id: string;
  version: number;
}

/**
 * The config_heads collection: per project (`_id` the project id) the version of its config, one more at every
 * change of an entry or an experiment. An instance that keeps a project's config compiled reads it to tell whether
 * another instance changed something.
 */
export class HeadStore {
  private readonly heads;

  constructor(db: Db) {
    this.heads = db.collection<HeadDoc>("config_heads");
  }

  /** 0 for a project that never changed its config. */
  async read(projectId: string): Promise<number> {
    return (await this.heads.findOne({ _id: projectId }))?.version ?? 0;
  }

  /** One more; `$inc` is atomic where updates are isolated, and the embedded engine's owner calls it under its lock. */
  async advance(projectId: string): Promise<void> {
    try {
      await this.heads.updateOne({ _id: projectId }, { $inc: { version: 1 } }, { upsert: true });
    } catch (error) {
      // Two first changes raced to insert the document: the other one is there now, so this one increments it.
      if (!isDuplicateKey(error)) throw error;
      await this.heads.updateOne({ _id: projectId }, { $inc: { version: 1 } });
    }
  }
}
