import type { OwnerMemory } from "../db/owner-memory.js";

/** One bucket of a tag's members as stored: its write count and its keys in compareKeys order (shared: read only). */
export interface MemberBucket {
  version: number;
  members: readonly string[];
}

interface Remembered extends MemberBucket {
  bytes: number;
}

/** A rough size in memory: fixed overhead, then each key's characters at two bytes and its slot. */
const sizeOf = (members: readonly string[]) => members.reduce((bytes, key) => bytes + 2 * key.length + 40, 200);

/**
 * The owner's memory of tag membership (player_tag_members; embedded FerretDB
 * only): a bucket read once is kept, and every acknowledged write of the
 * membership store (the only writer) replaces it. A read that began before a
 * write is not kept; a write that fails forgets the buckets it touched. Past
 * the budget, buckets are not kept and are read again.
 */
export class MembershipMemory {
  private readonly buckets = new Map<string, Remembered>();
  /** Moves at every write: a read that began before one may hold what that write changed. */
  private writes = 0;

  constructor(private readonly budget: OwnerMemory) {}

  /** The bucket by `_id` (an empty one at version 0: none stored), or undefined when not in memory. */
  get(id: string): MemberBucket | undefined {
    return this.buckets.get(id);
  }

  /** Where writes stand, taken before a read of the database. */
  get epoch(): number {
    return this.writes;
  }

  /** What a read begun at `epoch` found; kept only if no write came in between. */
  read(epoch: number, id: string, found: MemberBucket): void {
    if (epoch === this.writes && !this.buckets.has(id)) this.keep(id, found);
  }

  /** An acknowledged write: the bucket as it is stored now. */
  written(id: string, bucket: MemberBucket): void {
    this.writes++;
    this.drop(id);
    this.keep(id, bucket);
  }

  /** Buckets a failed write may or may not have changed. */
  forget(ids: Iterable<string>): void {
    this.writes++;
    for (const id of ids) this.drop(id);
  }

  forgetAll(): void {
    this.forget([...this.buckets.keys()]);
  }

  private keep(id: string, { version, members }: MemberBucket): void {
    const bytes = sizeOf(members);
    if (this.budget.take(bytes)) this.buckets.set(id, { version, members, bytes });
  }

  private drop(id: string): void {
    const known = this.buckets.get(id);
    if (!known) return;
    this.buckets.delete(id);
    this.budget.give(known.bytes);
  }
}
