import type { Db } from "mongodb";
import { isDuplicateKey } from "../../db/errors.js";

/** A project's config version, and how many live entries it has. */
export interface Head {
  version: number;
  keys: number;
}

interface HeadDoc extends Head {
  _id: string;
}

/**
 * The config_heads collection: per project (`_id` the project id) the version of its config, one more at every
 * change of an entry or an experiment, and the count of its live entries (its limit's). An instance that keeps a
 * project's config compiled reads it to tell whether another instance changed something.
 */
export class HeadStore {
  private readonly heads;

  constructor(db: Db) {
    this.heads = db.collection<HeadDoc>("config_heads");
  }

  /** Zeros for a project that never changed its config. */
  async read(projectId: string): Promise<Head> {
    const doc = await this.heads.findOne({ _id: projectId });
    return { version: doc?.version ?? 0, keys: doc?.keys ?? 0 };
  }

  /**
   * The version one more, the live entries `keys` more (or fewer); answers the version now. `$inc` is atomic where
   * updates are isolated, and the embedded engine's owner calls it under its lock.
   */
  async advance(projectId: string, keys: number): Promise<number> {
    const change = { $inc: { version: 1, keys } };
    const options = { upsert: true, returnDocument: "after" as const };
    try {
      return (await this.heads.findOneAndUpdate({ _id: projectId }, change, options))!.version;
    } catch (error) {
      // Two first changes raced to insert the document: the other one is there now, so this one increments it.
      if (!isDuplicateKey(error)) throw error;
      return (await this.heads.findOneAndUpdate({ _id: projectId }, change, options))!.version;
    }
  }
}
