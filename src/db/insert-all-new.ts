import type { AnyBulkWriteOperation, Collection, Document } from "mongodb";
import { batchedWrite, throwIfRefused } from "./batched-write.js";
import { isDuplicateKeyCode } from "./errors.js";

/** Inserts every document it can (in batches the engine takes); returns the indexes of those refused as duplicates. */
export async function insertAllNew<T extends Document & { _id: string }>(
  collection: Collection<T>,
  docs: T[],
): Promise<Set<number>> {
  const failures = await batchedWrite(
    collection,
    docs.map((document) => ({ insertOne: { document } }) as AnyBulkWriteOperation<T>),
  );
  throwIfRefused(
    `insert into ${collection.collectionName}`,
    failures.filter((failure) => !isDuplicateKeyCode(failure.code)),
  );
  return new Set(failures.map((failure) => failure.index));
}
