import { Long } from "mongodb";
import { projectOfId } from "../../db/ids.js";
import type { DocumentChange, SequencedChange } from "../apply/absorb.js";

interface PendingChange extends SequencedChange {
  first: number;
  at: number;
}

/** Which waiting changes to write (HistoryWriteBehind.entries). */
export interface PendingSelection {
  among?: (projectId: string) => boolean;
  addedBefore?: number;
  limit?: number;
}

/**
 * Player history changes the owner has applied to its memory and not written yet (embedded FerretDB only: the
 * worker is the histories' only writer there, and one write per touched player per segment bounded the apply).
 * The changes of one document over several segments merge into one write; the segments' plans stay stored until
 * it is done, so a worker taking over after a crash writes them again from the plans (worker.ts).
 */
export class HistoryWriteBehind {
  /**
   * Per document, its merged change, the last segment in it (`seq`), the first (`first`) and when that was added
   * (`at`, ms). A Map keeps the order of first insertion, so the oldest come first.
   */
  private readonly pending = new Map<string, PendingChange>();

  /**
   * Adds segment `seq`'s changes, at time `at` (ms). False, and nothing added, when one of them cannot be merged
   * with the change pending for its document: the pending ones are written first.
   */
  add(seq: number, changes: readonly DocumentChange[], at: number): boolean {
    const merged: PendingChange[] = [];
    for (const change of changes) {
      const before = this.pending.get(change.id);
      const both = before ? mergeChanges(before.change, change) : change;
      if (!both) return false;
      merged.push({ seq, first: before?.first ?? seq, at: before?.at ?? at, change: both });
    }
    for (const entry of merged) this.pending.set(entry.change.id, entry);
    return true;
  }

  /** Documents with a change not written. */
  get size(): number {
    return this.pending.size;
  }

  /**
   * The first segment with a change not written; undefined when nothing waits. Segments are added in queue order,
   * so the oldest entry holds it.
   */
  get firstSeq(): number | undefined {
    return this.pending.values().next().value?.first;
  }

  /** When the change waiting longest was first added (ms); undefined when nothing waits. */
  get oldestAt(): number | undefined {
    return this.pending.values().next().value?.at;
  }

  /**
   * What waits, oldest first, one change a document, each with the last segment merged into it: of the projects
   * `among` accepts, first added before `addedBefore`, at most `limit`.
   */
  entries({ among = () => true, addedBefore = Infinity, limit = Infinity }: PendingSelection = {}): SequencedChange[] {
    const selected: SequencedChange[] = [];
    for (const entry of this.pending.values()) {
      if (entry.at >= addedBefore || selected.length >= limit) break;
      if (among(projectOfId(entry.change.id))) selected.push(entry);
    }
    return selected;
  }

  /** These entries were written. */
  written(entries: readonly SequencedChange[]): void {
    for (const { change } of entries) this.pending.delete(change.id);
  }
}

const under = (path: string, field: string) => path === field || path.startsWith(`${field}.`);

/**
 * `later` applied after `earlier` as one update, as the database would apply the two in turn; null when `later`
 * adds under a field `earlier` removes (one update cannot remove a field and add to it).
 */
export function mergeChanges(earlier: DocumentChange, later: DocumentChange): DocumentChange | null {
  const removedBefore = earlier.unset ?? [];
  const removedAfter = later.unset ?? [];
  if (Object.keys(later.inc).some((path) => removedBefore.some((field) => under(path, field)))) return null;
  const inc: DocumentChange["inc"] = {};
  for (const [path, by] of Object.entries(earlier.inc)) {
    if (!removedAfter.some((field) => under(path, field))) inc[path] = by;
  }
  for (const [path, by] of Object.entries(later.inc)) inc[path] = path in inc ? sum(inc[path], by) : by;
  const set = { ...earlier.set, ...later.set };
  for (const field of removedAfter) delete set[field];
  const unset = [...new Set([...removedBefore.filter((field) => !(field in (later.set ?? {}))), ...removedAfter])];
  return { id: earlier.id, inc, set, unset, init: earlier.init };
}

function sum(a: number | Long, b: number | Long): number | Long {
  return typeof a === "number" && typeof b === "number" ? a + b : Long.fromValue(a).add(b);
}

/** Writing the history changes that waited failed for these projects (their changes wait on). */
export class HistoryWriteFailed extends Error {
  constructor(
    readonly projectIds: readonly string[],
    cause?: unknown,
  ) {
    super(`writing the waiting player histories failed for ${projectIds.length} project(s)`, { cause });
    this.name = "HistoryWriteFailed";
  }
}
