import type { AnyBulkWriteOperation, Collection, Document, Filter, WithId } from "mongodb";
import { batchedWrite, bulkWrite, type StatementFailure } from "./batched-write.js";
import type { Database } from "./database.js";
import { OwnerMemory } from "./owner-memory.js";
import { sideBySide } from "./gate.js";

/** `_id`s a MongoDB `$in` read carries per command. */
const IDS_PER_COMMAND = 1000;

/**
 * What the stores do differently per engine, decided here and nowhere else
 * (docs/database.md measures each). FerretDB 1.24 (embedded): `$in` scans, so
 * many documents are read by point reads side by side; one instance owns the
 * database, so it may remember what it wrote (`ownerMemory`). MongoDB: `$in`
 * over `_id` uses the index, and other instances write too, so nothing they can
 * change is remembered.
 */
export interface Engine {
  /** The documents of `ids`, in that order (null where there is none). */
  readByIds<D extends Document>(collection: Collection<D>, ids: readonly string[]): Promise<(WithId<D> | null)[]>;
  /** Writes `operations` unordered; answers the statements refused (a duplicate key, a guard), by index. */
  writeAll<D extends Document>(
    collection: Collection<D>,
    operations: readonly AnyBulkWriteOperation<D>[],
  ): Promise<StatementFailure[]>;
  /** The owner's memory budget; null where other instances may write, or with a budget of 0. */
  ownerMemory: OwnerMemory | null;
  /** Whether this instance is the only writer (an embedded database's owner): what it knows it wrote is all there is. */
  soleWriter: boolean;
  /**
   * Whether an update applies its filter atomically with its write, so a
   * version or high-water guard in the filter decides races. FerretDB 1.24
   * does not (measured), and scans for an `_id` filter with more in it; there
   * the one owner serialises its writes and guards by reading.
   */
  isolatesUpdates: boolean;
  /** Whether TTL indexes remove expired documents; otherwise the service sweeps them. */
  ttlIndexes: boolean;
  /**
   * Whether indexes other than `_id`'s answer queries. FerretDB 1.24 filters
   * every other field by a scan, so there an index only costs each write
   * (measured: +0.1 ms a profile write for two) and tag membership is
   * materialised in documents by `_id`; on MongoDB a multikey index on the
   * profiles' tags answers search and cohorts.
   */
  queryIndexes: boolean;
}

/** Whether one instance must own the database (src/db/lease.ts): true of FerretDB, for what `Engine` lists. */
export const needsOwner = (database: Pick<Database, "isFerretDb">): boolean => database.isFerretDb;

export function engineOf(database: Pick<Database, "isFerretDb">, ownerMemoryBytes: number): Engine {
  if (needsOwner(database)) {
    return {
      readByIds: <D extends Document>(collection: Collection<D>, ids: readonly string[]) =>
        sideBySide(ids, (_id) => collection.findOne({ _id } as Filter<D>)),
      // A command of 100 statements, or two of 50 side by side, deadlock it (batched-write.ts).
      writeAll: batchedWrite,
      ownerMemory: ownerMemoryBytes > 0 ? new OwnerMemory(ownerMemoryBytes) : null,
      soleWriter: true,
      isolatesUpdates: false,
      ttlIndexes: false,
      queryIndexes: false,
    };
  }
  return {
    async readByIds<D extends Document>(collection: Collection<D>, ids: readonly string[]) {
      const found = new Map<unknown, WithId<D>>();
      for (let from = 0; from < ids.length; from += IDS_PER_COMMAND) {
        const slice = ids.slice(from, from + IDS_PER_COMMAND);
        const docs = await collection.find({ _id: { $in: slice } } as Filter<D>).toArray();
        for (const doc of docs) found.set(doc._id, doc);
      }
      return ids.map((id) => found.get(id) ?? null);
    },
    writeAll: bulkWrite,
    ownerMemory: null,
    soleWriter: false,
    isolatesUpdates: true,
    ttlIndexes: true,
    queryIndexes: true,
  };
}
