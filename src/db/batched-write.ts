import { Gate } from "./gate.js";
import { MongoBulkWriteError, type AnyBulkWriteOperation, type Collection, type Document } from "mongodb";

/**
 * FerretDB 1.24 deadlocks for good on a write command of 100 or more
 * statements (measured; 99 works), so no command may carry more than this.
 */
export const MAX_STATEMENTS_PER_COMMAND = 99;
/**
 * Statements a command carries: half the limit, so that one command stays well
 * inside the database deadline on a loaded machine (a 99-statement profile
 * write took over 2 s there) for a round trip more per 50 statements.
 */
export const STATEMENTS_PER_COMMAND = 50;

/**
 * Multi-statement commands of this process in flight at once. SQLite runs one
 * write at a time, so more only queue inside FerretDB, where the wait counts
 * against the database deadline (measured: 503s with 8 update calls in flight
 * on a loaded 2-core machine); queued here, they wait without a deadline.
 */
const commands = new Gate(2);

/** A statement the server refused, by its index in the operations given. */
export interface StatementFailure {
  index: number;
  code: number;
}

/**
 * Every multi-statement write of the service goes through here: `operations`
 * are sent unordered, STATEMENTS_PER_COMMAND a command (never more than
 * MAX_STATEMENTS_PER_COMMAND), one
 * command after another. A statement the server refuses (a duplicate key, a
 * guard that did not match on an upsert) is reported by index and does not
 * stop the others; any other error is thrown.
 */
export async function batchedWrite<T extends Document>(
  collection: Collection<T>,
  operations: readonly AnyBulkWriteOperation<T>[],
): Promise<StatementFailure[]> {
  const failures: StatementFailure[] = [];
  for (let from = 0; from < operations.length; from += STATEMENTS_PER_COMMAND) {
    const batch = operations.slice(from, from + STATEMENTS_PER_COMMAND);
    try {
      await commands.run(() => collection.bulkWrite(batch as AnyBulkWriteOperation<T>[], { ordered: false }));
    } catch (error) {
      if (!(error instanceof MongoBulkWriteError) || error.writeErrors === undefined) throw error;
      const errors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
      // No statement failed: the command did (a timeout, a lost connection); throw that, so it maps to unavailable.
      if (errors.length === 0) throw error.errorResponse instanceof Error ? error.errorResponse : error;
      for (const e of errors) failures.push({ index: from + e.index, code: e.code });
    }
  }
  return failures;
}
