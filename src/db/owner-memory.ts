import { projectOfId } from "./ids.js";

/* The owner's memory (embedded engine): its byte budget, and what waits in it to be written behind. */

/**
 * The byte budget of what the instance that owns its database keeps in memory
 * (it is the only writer, so what it wrote stays true; OWNER_MEMORY_MB). Sizes are estimates from each cache's own measure; a
 * cache that cannot take what it needs keeps nothing and its reads go to the
 * database.
 */
export class OwnerMemory {
  private used = 0;

  constructor(readonly budgetBytes: number) {}

  /** Takes `bytes` of the budget; false (and nothing taken) when they do not fit. */
  take(bytes: number): boolean {
    if (this.used + bytes > this.budgetBytes) return false;
    this.used += bytes;
    return true;
  }

  /** Takes `bytes` (or gives back, when negative) whatever the budget: what must stay until it is written. */
  charge(bytes: number): void {
    this.used = Math.max(0, this.used + bytes);
  }

  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }

  /** Whether `bytes` more would fit now. */
  fits(bytes: number): boolean {
    return this.used + bytes <= this.budgetBytes;
  }

  get usedBytes(): number {
    return this.used;
  }
}

/** An entry waiting to be written, and when its document's first unwritten change came (ms). */
export interface Pending<E> {
  readonly entry: E;
  readonly at: number;
}

/** Which waiting entries to write. */
export interface PendingSelection {
  /** Only this project's: read from its own list, not from every project's. */
  project?: string;
  among?: (projectId: string) => boolean;
  addedBefore?: number;
  limit?: number;
}

export interface WriteBehindOptions<E> {
  /** The project-scoped `_id` of the document an entry changes. */
  idOf(entry: E): string;
  /** One entry with the effect of `earlier` then `later`; null when one write cannot say both. */
  merge(earlier: E, later: E): E | null;
}

/**
 * What the owner of an embedded database changed in its memory and has not written yet (it is the only writer, so
 * what it wrote stays true): one entry a document, its changes merged, oldest first. Membership's pages and counts
 * and player histories wait here; each side decides when its own are written (docs/architecture.md), since each
 * document has one writer. An entry stays until its write is acknowledged, so a failed write is tried again.
 */
export class WriteBehind<E> {
  /** By document; a Map keeps the order of first insertion, so the oldest come first. */
  private readonly pending = new Map<string, Pending<E>>();
  /** The documents waiting, by project, in the same order. */
  private readonly perProject = new Map<string, Set<string>>();

  constructor(private readonly options: WriteBehindOptions<E>) {}

  /**
   * Adds entries made at `at` (ms), each merged into its document's waiting one. False, and nothing added, when one
   * cannot be merged: what waits is written first.
   */
  add(entries: readonly E[], at: number): boolean {
    const { idOf, merge } = this.options;
    const merged: [string, Pending<E>][] = [];
    for (const entry of entries) {
      const id = idOf(entry);
      const before = this.pending.get(id);
      const both = before ? merge(before.entry, entry) : entry;
      if (both === null) return false;
      merged.push([id, { entry: both, at: before?.at ?? at }]);
    }
    for (const [id, pending] of merged) {
      if (!this.pending.has(id)) this.listed(projectOfId(id)).add(id);
      this.pending.set(id, pending);
    }
    return true;
  }

  /** Documents waiting. */
  get size(): number {
    return this.pending.size;
  }

  /** Whether a document of the project waits. */
  waits(projectId: string): boolean {
    return this.perProject.has(projectId);
  }

  /** The entry waiting longest; undefined when none waits. */
  get oldest(): Pending<E> | undefined {
    return this.pending.values().next().value;
  }

  /** What waits, oldest first: of the projects `among` accepts, first added before `addedBefore`, at most `limit`. */
  entries(selection: PendingSelection = {}): Pending<E>[] {
    const { project, among = () => true, addedBefore = Infinity, limit = Infinity } = selection;
    const ids = project === undefined ? this.pending.keys() : (this.perProject.get(project) ?? []);
    const selected: Pending<E>[] = [];
    for (const id of ids) {
      const pending = this.pending.get(id)!;
      if (pending.at >= addedBefore || selected.length >= limit) break;
      if (among(projectOfId(id))) selected.push(pending);
    }
    return selected;
  }

  /** Removes and answers what `selection` picks: a write in flight, whose documents changed meanwhile wait again. */
  take(selection: PendingSelection = {}): Pending<E>[] {
    const taken = this.entries(selection);
    this.written(taken);
    return taken;
  }

  /** These entries (from `entries`) are in the database: each goes, unless a change of its document came since. */
  written(entries: readonly Pending<E>[]): void {
    for (const pending of entries) {
      const id = this.options.idOf(pending.entry);
      if (this.pending.get(id) !== pending) continue;
      this.pending.delete(id);
      const projectId = projectOfId(id);
      const ids = this.listed(projectId);
      ids.delete(id);
      if (ids.size === 0) this.perProject.delete(projectId);
    }
  }

  private listed(projectId: string): Set<string> {
    let ids = this.perProject.get(projectId);
    if (!ids) this.perProject.set(projectId, (ids = new Set()));
    return ids;
  }
}
