import type { Db } from "mongodb";
import { isDuplicateKey } from "../db/errors.js";
import { ContentionError } from "../errors.js";
import { KeyedLock } from "../db/keyed-lock.js";

interface EventNamesDoc {
  /** The project. */
  _id: string;
  /** Every event name the project has used, in the order they came. */
  names: string[];
  /** Moves with each write: the guard of a write on MongoDB. */
  version: number;
}

/** Attempts of a guarded write before giving up to the caller's retry (another instance kept winning). */
const ATTEMPTS = 10;

/**
 * The event_names collection: per project, the distinct event names it has
 * used, at most `limit` (EVENT_NAME_LIMIT). A name once registered stays; so
 * this process keeps the names it has seen and asks the database only about
 * a name it has not.
 */
export class EventNameStore {
  private readonly docs;
  private readonly locks = new KeyedLock();
  private readonly known = new Map<string, Set<string>>();

  constructor(
    db: Db,
    private readonly limit: number,
    private readonly waitLimitMs: number,
  ) {
    this.docs = db.collection<EventNamesDoc>("event_names");
  }

  /** Registers what room allows of `names`; answers every name of `names` the project has, old or new. */
  async admit(projectId: string, names: readonly string[]): Promise<Set<string>> {
    const known = this.known.get(projectId);
    if (known && names.every((name) => known.has(name))) return known;
    return this.locks.run([projectId], () => this.register(projectId, names), { waitLimitMs: this.waitLimitMs });
  }

  private async register(projectId: string, names: readonly string[]): Promise<Set<string>> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const doc = await this.docs.findOne({ _id: projectId });
      const have = new Set(doc?.names ?? []);
      const added = [...new Set(names.filter((name) => !have.has(name)))].slice(0, this.limit - have.size);
      if (added.length > 0) {
        // Guarded by the version read: on MongoDB another instance's write makes this one match nothing.
        try {
          const written = await this.docs.updateOne(
            { _id: projectId, version: doc?.version ?? 0 },
            { $push: { names: { $each: added } }, $inc: { version: 1 } },
            { upsert: true },
          );
          if (written.matchedCount + written.upsertedCount === 0) continue;
        } catch (error) {
          if (isDuplicateKey(error)) continue;
          throw error;
        }
        for (const name of added) have.add(name);
      }
      this.known.set(projectId, have);
      return have;
    }
    throw new ContentionError(`event names of the project: ${ATTEMPTS} writes lost to other instances; retry`);
  }
}
