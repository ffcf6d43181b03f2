import type { AnyBulkWriteOperation, Collection, Document } from "mongodb";
import { batchedWrite } from "./batched-write.js";

const DUPLICATE_KEY = 11000;

/** Inserts every document it can (in batches the engine takes); returns the indexes of those refused as duplicates. */
export async function insertAllNew<T extends Document & { _id: string }>(
  collection: Collection<T>,
  docs: T[],
): Promise<Set<number>> {
  const failures = await batchedWrite(
    collection,
    docs.map((document) => ({ insertOne: { document } }) as AnyBulkWriteOperation<T>),
  );
  const other = failures.find((failure) => failure.code !== DUPLICATE_KEY);
  if (other) throw new Error(`insert into ${collection.collectionName} failed with code ${other.code}`);
  return new Set(failures.map((failure) => failure.index));
}
