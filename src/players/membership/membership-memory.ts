import { projectOfId } from "../../db/ids.js";
import type { OwnerMemory } from "../../db/owner-memory.js";
import { EMPTY_BUCKET, type MemberBucket, type MemberPage } from "./membership-pages.js";

/** A project's players_count and last-given time per tag id. */
export interface TagStats {
  counts: Map<number, number>;
  seen: Map<number, Date>;
}

interface Remembered extends MemberBucket {
  bytes: number;
}

/** A page's rough size in memory: fixed overhead, then each key's characters at two bytes and its slot. */
const pageSize = ({ low, members }: MemberPage) =>
  members.reduce((bytes, key) => bytes + 2 * key.length + 40, 100 + 2 * low.length);
const sizeOf = ({ pages }: MemberBucket) => pages.reduce((bytes, page) => bytes + pageSize(page), 100);
/** How much bigger `after` is than `before`, counting only the pages it does not share with it. */
function growth(before: MemberBucket, after: MemberBucket): number {
  const kept = new Set(before.pages);
  let bytes = 0;
  for (const page of after.pages) if (!kept.delete(page)) bytes += pageSize(page);
  for (const page of kept) bytes -= pageSize(page);
  return bytes;
}
/** A project's counts: a few map entries a tag. */
const statsSize = ({ counts, seen }: TagStats) => 200 + 60 * (counts.size + seen.size);

/**
 * The owner's memory of tag membership (player_tag_members; embedded FerretDB
 * only): a project's buckets and counts, filled by one read of the project's
 * documents (`whole`: a bucket not in memory has no page), or a bucket
 * (all its pages) read once where the project does not fit. Every write of the membership
 * store (the only writer) replaces what it touched: written through, once
 * acknowledged, or changed here first and written behind
 * (MembershipWriteBehind). A read that began before a write of its project is
 * not kept; a write through that fails forgets what it touched.
 */
export class MembershipMemory {
  private readonly buckets = new Map<string, Remembered>();
  private readonly stats = new Map<string, { stats: TagStats; bytes: number }>();
  /** Projects whose every document is in memory; reads of whole projects in flight; projects that did not fit. */
  private readonly wholeProjects = new Set<string>();
  private readonly filling = new Map<string, Promise<void>>();
  private readonly tooLarge = new Set<string>();
  /** Per project, moves at every write: a read that began before one may hold what that write changed. */
  private readonly writes = new Map<string, number>();

  constructor(private readonly budget: OwnerMemory) {}

  /** The bucket by `_id` (an empty one: none stored), or undefined when not in memory. */
  get(id: string): MemberBucket | undefined {
    return this.buckets.get(id) ?? (this.wholeProjects.has(projectOfId(id)) ? EMPTY_BUCKET : undefined);
  }

  /** A project's counts, or undefined when not in memory (shared: read only). */
  statsOf(projectId: string): TagStats | undefined {
    return this.stats.get(projectId)?.stats;
  }

  /** Where the project's writes stand, taken before a read of the database. */
  epoch(projectId: string): number {
    return this.writes.get(projectId) ?? 0;
  }

  /** What a read begun at `epoch` found; kept only if no write of its project came in between. */
  read(epoch: number, id: string, found: MemberBucket): void {
    if (epoch === this.epoch(projectOfId(id)) && !this.buckets.has(id)) this.keep(id, found);
  }

  /** A project's counts as a read begun at `epoch` found them; kept only if no write came in between. */
  readStats(epoch: number, projectId: string, found: TagStats): void {
    if (epoch !== this.epoch(projectId) || this.stats.has(projectId)) return;
    const bytes = statsSize(found);
    if (this.budget.take(bytes)) this.stats.set(projectId, { stats: found, bytes });
  }

  /**
   * Makes the project whole from `read` (every document of the project), once:
   * a tag change then reads no bucket. A write of the project during the read
   * leaves it to the next call; a project that does not fit is not read again
   * (its buckets are read one at a time).
   */
  async fill(
    projectId: string,
    read: () => Promise<{ buckets: ReadonlyMap<string, MemberBucket>; stats: TagStats }>,
  ): Promise<void> {
    if (this.wholeProjects.has(projectId) || this.tooLarge.has(projectId)) return;
    let filling = this.filling.get(projectId);
    if (!filling) {
      filling = (async () => {
        const epoch = this.epoch(projectId);
        const { buckets, stats } = await read();
        if (!this.readProject(epoch, projectId, buckets, stats) && epoch === this.epoch(projectId)) {
          this.tooLarge.add(projectId);
        }
      })().finally(() => this.filling.delete(projectId));
      this.filling.set(projectId, filling);
    }
    await filling;
  }

  /**
   * Every document of the project as a read begun at `epoch` found them: kept,
   * and the project whole, only if no write of it came in between and all fit.
   */
  readProject(epoch: number, projectId: string, buckets: ReadonlyMap<string, MemberBucket>, stats: TagStats): boolean {
    if (epoch !== this.epoch(projectId)) return false;
    this.readStats(epoch, projectId, stats);
    let all = this.stats.has(projectId);
    for (const [id, bucket] of buckets) if (!this.buckets.has(id)) all = this.keep(id, bucket) && all;
    if (all) this.wholeProjects.add(projectId);
    return all;
  }

  /** An acknowledged write: the bucket as it is stored now. */
  written(id: string, bucket: MemberBucket): void {
    this.moved(projectOfId(id));
    this.drop(id);
    if (!this.keep(id, bucket)) this.wholeProjects.delete(projectOfId(id));
  }

  /**
   * A change made here before it is written (written behind): replaces a kept
   * bucket whatever the budget (it must stay until written), or keeps a new
   * one if it fits. False when it did not fit: the caller writes it through.
   */
  change(id: string, bucket: MemberBucket): boolean {
    this.moved(projectOfId(id));
    const known = this.buckets.get(id);
    if (!known) return this.keep(id, bucket);
    // Only the pages that moved are measured: a change costs its pages, not its bucket.
    const bytes = known.bytes + growth(known, bucket);
    this.budget.charge(bytes - known.bytes);
    this.buckets.set(id, { pages: bucket.pages, bytes });
    return true;
  }

  /** Counts changed here before they are written (written behind), whatever the budget. */
  changeStats(projectId: string, stats: TagStats): void {
    this.moved(projectId);
    const known = this.stats.get(projectId);
    const bytes = statsSize(stats);
    this.budget.charge(bytes - (known?.bytes ?? 0));
    this.stats.set(projectId, { stats, bytes });
  }

  /** Buckets a failed write may or may not have changed. */
  forget(ids: Iterable<string>): void {
    for (const id of ids) {
      this.moved(projectOfId(id));
      this.wholeProjects.delete(projectOfId(id));
      this.drop(id);
    }
  }

  forgetAll(): void {
    this.forget([...this.buckets.keys()]);
    for (const [projectId, known] of this.stats) {
      this.moved(projectId);
      this.budget.give(known.bytes);
    }
    this.stats.clear();
    this.wholeProjects.clear();
    this.tooLarge.clear();
  }

  private moved(projectId: string): void {
    this.writes.set(projectId, this.epoch(projectId) + 1);
  }

  private keep(id: string, bucket: MemberBucket): boolean {
    const bytes = sizeOf(bucket);
    if (!this.budget.take(bytes)) return false;
    this.buckets.set(id, { pages: bucket.pages, bytes });
    return true;
  }

  private drop(id: string): void {
    const known = this.buckets.get(id);
    if (!known) return;
    this.buckets.delete(id);
    this.budget.give(known.bytes);
  }
}
