import type { AnyBulkWriteOperation, Collection, Document } from "mongodb";
import { type Engine, throwIfRefused } from "./engine.js";
import { isDuplicateKeyCode } from "./errors.js";

/** Inserts every document it can (in batches the engine takes); returns the indexes of those refused as duplicates. */
export async function insertAllNew<T extends Document & { _id: string }>(
  engine: Engine,
  collection: Collection<T>,
  docs: T[],
): Promise<Set<number>> {
  const failures = await engine.writeAll(
    collection,
    docs.map((document) => ({ insertOne: { document } }) as AnyBulkWriteOperation<T>),
  );
  throwIfRefused(
    `insert into ${collection.collectionName}`,
    failures.filter((failure) => !isDuplicateKeyCode(failure.code)),
  );
  return new Set(failures.map((failure) => failure.index));
}
