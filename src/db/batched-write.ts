import { MongoBulkWriteError, type AnyBulkWriteOperation, type Collection, type Document } from "mongodb";

/**
 * FerretDB 1.24 deadlocks for good on a write command of 100 or more
 * statements (measured; 99 works), so no command may carry more than this.
 */
export const MAX_STATEMENTS_PER_COMMAND = 99;

/** A statement the server refused, by its index in the operations given. */
export interface StatementFailure {
  index: number;
  code: number;
}

/**
 * Every multi-statement write of the service goes through here: `operations`
 * are sent unordered, at most MAX_STATEMENTS_PER_COMMAND a command, one
 * command after another. A statement the server refuses (a duplicate key, a
 * guard that did not match on an upsert) is reported by index and does not
 * stop the others; any other error is thrown.
 */
export async function batchedWrite<T extends Document>(
  collection: Collection<T>,
  operations: readonly AnyBulkWriteOperation<T>[],
): Promise<StatementFailure[]> {
  const failures: StatementFailure[] = [];
  for (let from = 0; from < operations.length; from += MAX_STATEMENTS_PER_COMMAND) {
    const batch = operations.slice(from, from + MAX_STATEMENTS_PER_COMMAND);
    try {
      await collection.bulkWrite(batch as AnyBulkWriteOperation<T>[], { ordered: false });
    } catch (error) {
      if (!(error instanceof MongoBulkWriteError) || error.writeErrors === undefined) throw error;
      const errors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
      if (errors.length === 0) throw error;
      for (const e of errors) failures.push({ index: from + e.index, code: e.code });
    }
  }
  return failures;
}
