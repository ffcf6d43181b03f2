import { MongoBulkWriteError, type Collection, type Document, type OptionalUnlessRequiredId } from "mongodb";
import { isDuplicateKey } from "./errors.js";

/** Inserts every document it can; returns the indexes of those refused as duplicates. */
export async function insertAllNew<T extends Document & { _id: string }>(
  collection: Collection<T>,
  docs: T[],
): Promise<Set<number>> {
  if (docs.length === 0) return new Set();
  try {
    await collection.insertMany(docs as OptionalUnlessRequiredId<T>[], { ordered: false });
    return new Set();
  } catch (error) {
    if (!(error instanceof MongoBulkWriteError) || !isDuplicateKey(error)) throw error;
    const errors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
    return new Set(errors.map((e) => e.index));
  }
}
