import { WriteRefusedError } from "../errors.js";
import { Gate } from "./gate.js";
import { MongoBulkWriteError, type AnyBulkWriteOperation, type Collection, type Document } from "mongodb";

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
