import type { AnyBulkWriteOperation, Collection, Document } from "mongodb";

/** Any rollup document: addressed by `_id`, with the high-water mark of the queue it has absorbed. */
export interface RollupDoc extends Document {
  _id: string;
  hw: number;
}
import { batchedWrite } from "../db/batched-write.js";

const DUPLICATE_KEY = 11000;

/** A change to one rollup document, as a plan records it. */
export interface DocumentChange {
  id: string;
  inc: Record<string, number>;
  set?: Record<string, unknown>;
  unset?: string[];
  /** Fields a new document starts with. */
  init: Record<string, unknown>;
}

/**
 * Writes `changes` of queue segment `seq`, each exactly once: a document
 * remembers in `hw` the last segment it absorbed, and a change applies only
 * where `hw` is older. Where the document already absorbed `seq`, the guard
 * does not match, the upsert collides with the existing `_id`, and that
 * duplicate key is the proof it was written before (a replay after a crash,
 * or another worker that got there first).
 */
export async function absorb(
  collection: Collection<RollupDoc>,
  seq: number,
  changes: readonly DocumentChange[],
): Promise<void> {
  const operations: AnyBulkWriteOperation<RollupDoc>[] = changes.map((change) => {
    const update: Document = { $set: { ...change.set, hw: seq }, $setOnInsert: change.init };
    if (Object.keys(change.inc).length > 0) update.$inc = change.inc;
    if (change.unset?.length) update.$unset = Object.fromEntries(change.unset.map((field) => [field, ""]));
    return { updateOne: { filter: { _id: change.id, hw: { $lt: seq } }, update, upsert: true } };
  });
  const failures = await batchedWrite(collection, operations);
  const other = failures.find((failure) => failure.code !== DUPLICATE_KEY);
  if (other) throw new Error(`rollup write failed with code ${other.code}`);
}
