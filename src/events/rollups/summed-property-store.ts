import type { Db } from "mongodb";
import { KeyedLock } from "../../db/keyed-lock.js";
import { isDuplicateKey } from "../../db/errors.js";

/** A property of an event name that the project sums, known by an id never given twice in the project. */
export interface SummedProperty {
  /** The sum's key in the activity chunks' sums: a sum turned off and on again starts afresh. */
  id: string;
  name: string;
  property: string;
  /** The queue segment that turned it on: later segments sum it as they apply, the back-fill the earlier ones. */
  from: number | null;
  /** The back-fill's steps written so far counted the raw events of the days through this one (absent: none). */
  counted?: string;
  /** The back-fill is written: reads may show it. */
  ready: boolean;
}

interface SummedDoc {
  _id: string;
  pairs: SummedProperty[];
  next_id: number;
  version: number;
}

/** A change of the project's list: the new list, or null to leave it as it is. */
type Change = (pairs: readonly SummedProperty[], nextId: number) => SummedProperty[] | null;

/** Attempts of a compare-and-swap before giving up (each loss is another instance's write of the same list). */
const ATTEMPTS = 20;

/**
 * The event_summed_properties collection: `_id` the project, its summed properties (at most a few dozen, one
 * document). Written by properties/update (add, remove) and the apply worker (turned on, ready); writes are
 * serialised in the process (FerretDB loses concurrent updates of a document) and guarded by `version` between
 * instances on MongoDB. The worker keeps what it read, per project, while its lease runs without a gap: only
 * the worker turns a sum on, so what it kept misses only removals, whose sums it then keeps adding unread.
 */
export class SummedPropertyStore {
  private readonly docs;
  private readonly locks = new KeyedLock();
  private readonly known = new Map<string, SummedProperty[]>();

  constructor(db: Db) {
    this.docs = db.collection<SummedDoc>("event_summed_properties");
  }

  async list(projectId: string): Promise<SummedProperty[]> {
    return (await this.docs.findOne({ _id: projectId }))?.pairs ?? [];
  }

  /** The properties the worker sums in segment `seq` of the project, by event name. */
  async summedAt(projectId: string, seq: number): Promise<Map<string, SummedProperty[]>> {
    let pairs = this.known.get(projectId);
    if (!pairs) this.known.set(projectId, (pairs = await this.list(projectId)));
    const byName = new Map<string, SummedProperty[]>();
    for (const pair of pairs) {
      if (pair.from !== null && pair.from < seq) byName.set(pair.name, [...(byName.get(pair.name) ?? []), pair]);
    }
    return byName;
  }

  /** The apply worker's lease on the project lapsed before it took it again: another may have turned sums on. */
  leaseLapsed(projectId: string): void {
    this.known.delete(projectId);
  }

  /** Applies `change` to the project's list; answers the list as written (or as it was, when unchanged). */
  async update(projectId: string, change: Change): Promise<SummedProperty[]> {
    return this.locks.run([projectId], async () => {
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const doc = await this.docs.findOne({ _id: projectId });
        const pairs = change(doc?.pairs ?? [], doc?.next_id ?? 1);
        if (pairs === null) return doc?.pairs ?? [];
        const nextId = Math.max(doc?.next_id ?? 1, ...pairs.map((pair) => Number(pair.id) + 1));
        if (await this.swap(projectId, doc, pairs, nextId)) {
          this.known.delete(projectId);
          return pairs;
        }
      }
      throw new Error("summed properties: too many concurrent writers");
    });
  }

  /** Writes the list where `doc` (null: none) is still the stored one; false when another writer came first. */
  private async swap(projectId: string, doc: SummedDoc | null, pairs: SummedProperty[], nextId: number) {
    if (!doc) {
      try {
        await this.docs.insertOne({ _id: projectId, pairs, next_id: nextId, version: 1 });
        return true;
      } catch (error) {
        if (isDuplicateKey(error)) return false;
        throw error;
      }
    }
    const result = await this.docs.updateOne(
      { _id: projectId, version: doc.version },
      { $set: { pairs, next_id: nextId, version: doc.version + 1 } },
    );
    return result.matchedCount === 1;
  }
}
