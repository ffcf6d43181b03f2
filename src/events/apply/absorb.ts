import { Long, type AnyBulkWriteOperation, type Collection, type Document } from "mongodb";
import type { Engine } from "../../db/engine.js";
import { isDuplicateKeyCode } from "../../db/errors.js";

/** Any rollup document: addressed by `_id`, with the high-water mark of the queue it has absorbed. */
export interface RollupDoc extends Document {
  _id: string;
  hw: number;
}

/** A change to one rollup document, as a plan records it. */
export interface DocumentChange {
  id: string;
  /** Counts to add: each is written as an Int64 (see mapInt64). */
  inc: Record<string, number | Long>;
  set?: Record<string, unknown>;
  unset?: string[];
  /** Fields a new document starts with. */
  init: Record<string, unknown>;
}

export interface AbsorbOptions {
  /**
   * True when no document can have absorbed `seq` yet (the plan was just
   * stored by this worker, before any write): the high-water marks need no read.
   */
  fresh: boolean;
}

/** A change with the queue segment it is of: the document's `hw` once written. */
export interface SequencedChange {
  seq: number;
  change: DocumentChange;
}

/**
 * Writes `changes` of queue segment `seq`, each exactly once: a document
 * remembers in `hw` the last segment it absorbed, and a change applies only
 * where `hw` is older. After a crash (not `fresh`) the marks are read first and
 * documents that absorbed `seq` already are left out. With the guard in the
 * filter, a document that absorbed `seq` meanwhile does not match, the upsert
 * collides with the existing `_id`, and that duplicate key is the proof it was
 * written before.
 */
export function absorb(
  engine: Engine,
  collection: Collection<RollupDoc>,
  seq: number,
  changes: readonly DocumentChange[],
  options: AbsorbOptions,
): Promise<void> {
  return absorbEach(
    engine,
    collection,
    changes.map((change) => ({ seq, change })),
    options,
  );
}

/** As absorb(), each change of its own segment (the owner's histories written behind: waitingHistories, player-rollup.ts). */
export async function absorbEach(
  engine: Engine,
  collection: Collection<RollupDoc>,
  changes: readonly SequencedChange[],
  { fresh }: AbsorbOptions,
): Promise<void> {
  let pending = changes;
  if (!fresh) {
    const marks = await engine.readByIds(
      collection,
      changes.map(({ change }) => change.id),
    );
    pending = changes.filter(({ seq }, i) => (marks[i]?.hw ?? -1) < seq);
  }
  // Where the engine isolates updates the filter carries the guard, which keeps two workers on one segment exact;
  // FerretDB scans for such a filter (20 ms a statement over 99 documents), and its one owner guards by the read.
  const guardInFilter = engine.isolatesUpdates;
  const operations: AnyBulkWriteOperation<RollupDoc>[] = pending.map(({ seq, change }) => {
    const update: Document = { $set: { ...change.set, hw: seq }, $setOnInsert: change.init };
    if (Object.keys(change.inc).length > 0) update.$inc = mapInt64(change.inc);
    if (change.unset?.length) update.$unset = Object.fromEntries(change.unset.map((field) => [field, ""]));
    const filter = guardInFilter ? { _id: change.id, hw: { $lt: seq } } : { _id: change.id };
    return { updateOne: { filter, update, upsert: true } };
  });
  const failures = await engine.writeAll(collection, operations);
  const other = failures.find((failure) => !isDuplicateKeyCode(failure.code));
  if (other) throw new Error(`rollup write failed with code ${other.code}`);
}

/**
 * Every counter is added in 64 bits: the driver sends a small number as an
 * Int32, and FerretDB 1.24 wraps an Int32 `$inc` past 2^31 where MongoDB
 * widens it. An Int64 field stays one on both.
 */
function mapInt64(inc: Record<string, number | Long>): Record<string, Long> {
  return Object.fromEntries(
    Object.entries(inc).map(([path, by]) => [path, typeof by === "number" ? Long.fromNumber(by) : by]),
  );
}
