import type { Db } from "mongodb";
import { isDuplicateKey } from "../../db/errors.js";
import { ContentionError } from "../../errors.js";
import { KeyedLock } from "../../db/keyed-lock.js";

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

/** A project's event names in the order they came: a name's place never changes (cohort-rollup-store.ts). */
export class ProjectNames {
  private readonly places: ReadonlyMap<string, number>;

  constructor(readonly list: readonly string[]) {
    this.places = new Map(list.map((name, place) => [name, place]));
  }

  has(name: string): boolean {
    return this.places.has(name);
  }

  placeOf(name: string): number | undefined {
    return this.places.get(name);
  }

  get size(): number {
    return this.list.length;
  }
}

/**
 * The event_names collection: per project, the distinct event names it has
 * used, at most `limit` (EVENT_NAME_LIMIT) from ingestion. A name once
 * registered stays in its place; so this process keeps the names it has seen
 * and asks the database only about a name it has not.
 */
export class EventNameStore {
  private readonly docs;
  private readonly locks = new KeyedLock();
  private readonly known = new Map<string, ProjectNames>();

  /** `soleWriter`: no other instance registers names (an embedded database's owner), so what is known is all. */
  constructor(
    db: Db,
    private readonly options: { limit: number; waitLimitMs: number; soleWriter: boolean },
  ) {
    this.docs = db.collection<EventNamesDoc>("event_names");
  }

  /** Registers what room allows of `names` (ingestion); answers every name the project has, old or new. */
  admit(projectId: string, names: readonly string[]): Promise<ProjectNames> {
    return this.ensure(projectId, names, this.options.limit);
  }

  /**
   * The project's names now; with `needed`, at least those. Another instance
   * may have registered more unless this one is the sole writer, but a name's
   * place never changes, so a known list holding every name `needed` answers for them.
   */
  async current(projectId: string, needed?: readonly string[]): Promise<ProjectNames> {
    const known = this.known.get(projectId);
    if (known && (this.options.soleWriter || needed?.every((name) => known.has(name)))) return known;
    return this.remember(projectId, (await this.docs.findOne({ _id: projectId }))?.names ?? []);
  }

  private async ensure(projectId: string, names: readonly string[], limit: number): Promise<ProjectNames> {
    const known = this.known.get(projectId);
    if (known && names.every((name) => known.has(name))) return known;
    return this.locks.run([projectId], () => this.register(projectId, names, limit), {
      waitLimitMs: this.options.waitLimitMs,
    });
  }

  private async register(projectId: string, names: readonly string[], limit: number): Promise<ProjectNames> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const doc = await this.docs.findOne({ _id: projectId });
      const have = doc?.names ?? [];
      const had = new Set(have);
      const added = [...new Set(names.filter((name) => !had.has(name)))].slice(0, Math.max(0, limit - have.length));
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
      }
      return this.remember(projectId, [...have, ...added]);
    }
    throw new ContentionError(`event names of the project: ${ATTEMPTS} writes lost to other instances; retry`);
  }

  private remember(projectId: string, list: readonly string[]): ProjectNames {
    const names = new ProjectNames(list);
    this.known.set(projectId, names);
    return names;
  }
}
