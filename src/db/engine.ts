import {
  MongoBulkWriteError,
  type AnyBulkWriteOperation,
  type Collection,
  type Document,
  type Filter,
  type WithId,
} from "mongodb";
import { WriteRefusedError } from "../errors.js";
import type { Database } from "./database.js";
import { Gate, sideBySide } from "./gate.js";

/* The engine seam: what the stores do differently per engine, and how writes are batched. */

/** `_id`s a MongoDB `$in` read carries per command. */
const IDS_PER_COMMAND = 1000;

/**
 * What the stores do differently per engine, decided here and nowhere else
 * (docs/database.md measures each). FerretDB 1.24 (embedded): `$in` scans, so
 * many documents are read by point reads side by side; one instance owns the
 * database, so what it cached of what it wrote is what the database holds (`soleWriter`). MongoDB: `$in` over `_id`
 * uses the index, and other instances write too, so a cache is checked against the versions stored.
 */
export interface Engine {
  /** The documents of `ids`, in that order (null where there is none). */
  readByIds<D extends Document>(collection: Collection<D>, ids: readonly string[]): Promise<(WithId<D> | null)[]>;
  /** Writes `operations` unordered; answers the statements refused (a duplicate key, a guard), by index. */
  writeAll<D extends Document>(
    collection: Collection<D>,
    operations: readonly AnyBulkWriteOperation<D>[],
  ): Promise<StatementFailure[]>;
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
   * (measured: +0.1 ms a profile write for two), so every query there is by
   * `_id`; on MongoDB the few queries off `_id` (docs/database.md) ride theirs.
   */
  queryIndexes: boolean;
}

/** Whether one instance must own the database (src/db/lease.ts): true of FerretDB, for what `Engine` lists. */
export const needsOwner = (database: Pick<Database, "isFerretDb">): boolean => database.isFerretDb;

export function engineOf(database: Pick<Database, "isFerretDb">): Engine {
  if (needsOwner(database)) {
    return {
      readByIds: <D extends Document>(collection: Collection<D>, ids: readonly string[]) =>
        sideBySide(ids, (_id) => collection.findOne({ _id } as Filter<D>)),
      // A command of 100 statements, or two of 50 side by side, deadlock it (MAX_STATEMENTS_PER_COMMAND below).
      writeAll: batchedWrite,
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
    soleWriter: false,
    isolatesUpdates: true,
    ttlIndexes: true,
    queryIndexes: true,
  };
}

/**
 * FerretDB 1.24 deadlocks for good on one write command of 100 statements or
 * more (99 works alone), and on two commands of 50 side by side (measured:
 * two or three 50-statement writers beside eight single writers hung within a
 * minute; one of 50, two of 25 and four of 25 ran for 60–120 s without).
 */
export const MAX_STATEMENTS_PER_COMMAND = 99;
/** Statements of this process's multi-statement commands in flight at once: two commands of 25, measured safe. */
export const MAX_STATEMENTS_IN_FLIGHT = 50;
/**
 * Statements a command carries. Two commands of 25 side by side wrote more
 * statements a second than one of 50 at a time (measured, same engine).
 */
export const STATEMENTS_PER_COMMAND = 25;

/**
 * Multi-statement commands of this process in flight at once. SQLite runs one
 * write at a time, so more only queue inside FerretDB, where the wait counts
 * against the database deadline; larger commands side by side risk the deadlock.
 */
const commands = new Gate(MAX_STATEMENTS_IN_FLIGHT / STATEMENTS_PER_COMMAND);

/** A statement the server refused, by its index in the operations given. */
export interface StatementFailure {
  index: number;
  code: number;
}

/**
 * The embedded engine's multi-statement writes (Engine.writeAll): `operations`
 * are sent unordered, STATEMENTS_PER_COMMAND a command (never more than
 * MAX_STATEMENTS_PER_COMMAND), one command after another. A statement the
 * server refuses (a duplicate key, a guard that did not match on an upsert) is
 * reported by index and does not stop the others; any other error is thrown.
 */
export async function batchedWrite<T extends Document>(
  collection: Collection<T>,
  operations: readonly AnyBulkWriteOperation<T>[],
): Promise<StatementFailure[]> {
  const failures: StatementFailure[] = [];
  for (let from = 0; from < operations.length; from += STATEMENTS_PER_COMMAND) {
    const batch = operations.slice(from, from + STATEMENTS_PER_COMMAND);
    failures.push(...(await commands.run(() => writeUnordered(collection, batch, from))));
  }
  return failures;
}

/** MongoDB's (Engine.writeAll): every statement in one unordered write, which the driver splits past the server's batch size. */
export async function bulkWrite<T extends Document>(
  collection: Collection<T>,
  operations: readonly AnyBulkWriteOperation<T>[],
): Promise<StatementFailure[]> {
  return operations.length === 0 ? [] : writeUnordered(collection, operations, 0);
}

/** One unordered write of `batch`, the statements at `offset` of the caller's; the statements refused. */
async function writeUnordered<T extends Document>(
  collection: Collection<T>,
  batch: readonly AnyBulkWriteOperation<T>[],
  offset: number,
): Promise<StatementFailure[]> {
  try {
    await collection.bulkWrite(batch as AnyBulkWriteOperation<T>[], { ordered: false });
    return [];
  } catch (error) {
    if (!(error instanceof MongoBulkWriteError) || error.writeErrors === undefined) throw error;
    const errors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
    // No statement failed: the command did (a timeout, a lost connection); throw that, so it maps to unavailable.
    if (errors.length === 0) throw error.errorResponse instanceof Error ? error.errorResponse : error;
    return errors.map((e) => ({ index: offset + e.index, code: e.code }));
  }
}

/** Throws when the database refused any of `failures` (those a caller handles filtered out first); they become the `cause`. */
export function throwIfRefused(what: string, failures: readonly StatementFailure[]): void {
  if (failures.length === 0) return;
  const codes = [...new Set(failures.map((failure) => failure.code))].join(", ");
  throw new WriteRefusedError(`${what} refused by the database (code ${codes})`, { cause: failures });
}
