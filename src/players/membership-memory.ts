import type { OwnerMemory } from "../db/owner-memory.js";

/** One bucket of a tag's members as stored: its write count and its keys in compareKeys order (shared: read only). */
export interface MemberBucket {
  version: number;
  members: readonly string[];
}

/** A project's players_count and last-given time per tag id. */
export interface TagStats {
  counts: Map<number, number>;
  seen: Map<number, Date>;
}

interface Remembered extends MemberBucket {
  bytes: number;
}

/** A rough size in memory: fixed overhead, then each key's characters at two bytes and its slot. */
const sizeOf = (members: readonly string[]) => members.reduce((bytes, key) => bytes + 2 * key.length + 40, 200);
/** A project's counts: a few map entries a tag. */
const statsSize = ({ counts, seen }: TagStats) => 200 + 60 * (counts.size + seen.size);

/**
 * The owner's memory of tag membership (player_tag_members; embedded FerretDB
 * only): a bucket or a project's counts read once are kept, and every write
 * of the membership store (the only writer) replaces them: written through,
 * once acknowledged, or changed here first and written behind
 * (MembershipWriteBehind). A read that began before a write is not kept; a
 * write through that fails forgets what it touched. Past the budget, buckets
 * are not kept and are read again.
 */
export class MembershipMemory {
  private readonly buckets = new Map<string, Remembered>();
  private readonly stats = new Map<string, { stats: TagStats; bytes: number }>();
  /** Moves at every write: a read that began before one may hold what that write changed. */
  private writes = 0;

  constructor(private readonly budget: OwnerMemory) {}

  /** The bucket by `_id` (an empty one at version 0: none stored), or undefined when not in memory. */
  get(id: string): MemberBucket | undefined {
    return this.buckets.get(id);
  }

  /** A project's counts, or undefined when not in memory (shared: read only). */
  statsOf(projectId: string): TagStats | undefined {
    return this.stats.get(projectId)?.stats;
  }

  /** Where writes stand, taken before a read of the database. */
  get epoch(): number {
    return this.writes;
  }

  /** What a read begun at `epoch` found; kept only if no write came in between. */
  read(epoch: number, id: string, found: MemberBucket): void {
    if (epoch === this.writes && !this.buckets.has(id)) this.keep(id, found);
  }

  /** A project's counts as a read begun at `epoch` found them; kept only if no write came in between. */
  readStats(epoch: number, projectId: string, found: TagStats): void {
    if (epoch !== this.writes || this.stats.has(projectId)) return;
    const bytes = statsSize(found);
    if (this.budget.take(bytes)) this.stats.set(projectId, { stats: found, bytes });
  }

  /** An acknowledged write: the bucket as it is stored now. */
  written(id: string, bucket: MemberBucket): void {
    this.writes++;
    this.drop(id);
    this.keep(id, bucket);
  }

  /**
   * A change made here before it is written (written behind): replaces a kept
   * bucket whatever the budget (it must stay until written), or keeps a new
   * one if it fits. False when it did not fit: the caller writes it through.
   */
  change(id: string, bucket: MemberBucket): boolean {
    this.writes++;
    const known = this.buckets.get(id);
    if (!known) return this.keep(id, bucket);
    const bytes = sizeOf(bucket.members);
    this.budget.charge(bytes - known.bytes);
    this.buckets.set(id, { ...bucket, bytes });
    return true;
  }

  /** Counts changed here before they are written (written behind); the caller holds them in memory first (statsOf). */
  changeStats(projectId: string, stats: TagStats): void {
    this.writes++;
    const known = this.stats.get(projectId);
    const bytes = statsSize(stats);
    this.budget.charge(bytes - (known?.bytes ?? 0));
    this.stats.set(projectId, { stats, bytes });
  }

  /** Buckets a failed write may or may not have changed. */
  forget(ids: Iterable<string>): void {
    this.writes++;
    for (const id of ids) this.drop(id);
  }

  /** A project's counts a failed write may or may not have changed. */
  forgetStats(projectId: string): void {
    this.writes++;
    const known = this.stats.get(projectId);
    if (!known) return;
    this.stats.delete(projectId);
    this.budget.give(known.bytes);
  }

  forgetAll(): void {
    this.forget([...this.buckets.keys()]);
    for (const projectId of [...this.stats.keys()]) this.forgetStats(projectId);
  }

  private keep(id: string, { version, members }: MemberBucket): boolean {
    const bytes = sizeOf(members);
    if (!this.budget.take(bytes)) return false;
    this.buckets.set(id, { version, members, bytes });
    return true;
  }

  private drop(id: string): void {
    const known = this.buckets.get(id);
    if (!known) return;
    this.buckets.delete(id);
    this.budget.give(known.bytes);
  }
}
