import { MongoBulkWriteError, MongoServerError } from "mongodb";

const DUPLICATE_KEY = 11000;

/** True when a write failed only because a document with that key already exists (a bulk write: every failure was one). */
export function isDuplicateKey(error: unknown): boolean {
  if (error instanceof MongoBulkWriteError) {
    const failures = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
    return failures.length > 0 && failures.every((failure) => failure.code === DUPLICATE_KEY);
  }
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY;
}
