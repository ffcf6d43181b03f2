import type { AnyBulkWriteOperation, Db } from "mongodb";
import type { Engine } from "../../db/engine.js";
import { throwIfRefused } from "../../db/batched-write.js";
import { scanProject } from "../../db/project-scan.js";
import type { Logger } from "../../log.js";
import { sortKeys } from "../rules/key-order.js";
import {
  bucketId,
  byDocument,
  MEMBERSHIP_BUCKETS,
  type BucketChange,
  type MembershipChange,
} from "./membership-buckets.js";
import {
  bucketStatement,
  countsChanged,
  countsStatement,
  parseMembers,
  parseStats,
  statsId,
  statsStatement,
  type BucketDoc,
  type CountChange,
  type MembersDoc,
  type StatsDoc,
} from "./membership-documents.js";
import { MembershipMemory, type MemberBucket, type TagStats } from "./membership-memory.js";
import { MembershipWriteBehind } from "./membership-write-behind.js";

/** A bucket write: its statement, and the bucket as the database holds it once acknowledged. */
interface BucketWrite {
  _id: string;
  operation: AnyBulkWriteOperation<MembersDoc>;
  written: MemberBucket;
}

/**
 * The player_tag_members collection: per project and tag, the identity keys
 * carrying the tag, in MEMBERSHIP_BUCKETS documents addressed by `_id`
 * `<project>/<tag>/<bucket>`, and per project one document of its tags'
 * players_count and last-given times, so a round's membership and counts are
 * one command. A write reads each bucket it changes and writes the bucket's
 * new set back: adding a member twice or removing it twice leaves the same
 * set, so writing the same change twice is harmless. The owner of an embedded
 * database changes its memory and writes behind (MembershipWriteBehind).
 * Where indexes answer queries (MongoDB) only the counts are kept here: the
 * profiles' tag index is the membership (`materialised`).
 */
export class MembershipStore {
  private readonly members;
  private readonly memory: MembershipMemory | null;
  private readonly behind: MembershipWriteBehind | null;

  constructor(
    db: Db,
    private readonly engine: Engine,
    log?: Logger,
  ) {
    this.members = db.collection<MembersDoc>("player_tag_members");
    this.memory = engine.ownerMemory && new MembershipMemory(engine.ownerMemory);
    this.behind =
      this.memory &&
      new MembershipWriteBehind({ write: (projectId, ids, stats) => this.writeRemembered(projectId, ids, stats), log });
  }

  /**
   * Whether membership is kept in bucket documents here. Where indexes answer queries (MongoDB) it is not: the
   * profiles' multikey tag index answers search and cohorts (ProfileStore), and only the counts are written.
   */
  get materialised(): boolean {
    return !this.engine.queryIndexes;
  }

  /** The bucket documents a change writes: the caller serialises writes to each (FerretDB loses concurrent ones). */
  documentIds(projectId: string, changes: readonly MembershipChange[]): string[] {
    return this.materialised ? [...byDocument(projectId, changes).keys()] : [];
  }

  /**
   * Applies `changes` (a key in both `added` and `removed` of one tag ends
   * removed) and `counts`. Each bucket is read and written back if its set
   * moved, in one command with the counts (the caller holds their locks). The
   * owner changes its memory instead, and writes through only the buckets its
   * budget cannot hold. Where membership is not materialised, only the counts.
   */
  async apply(projectId: string, changes: readonly MembershipChange[], counts?: CountChange): Promise<void> {
    const pending = this.materialised ? byDocument(projectId, changes) : new Map<string, BucketChange>();
    let countsLeft = counts && (counts.deltas.size > 0 || counts.given.length > 0) ? counts : undefined;
    if (countsLeft && this.behind) {
      await this.changeCounts(projectId, countsLeft);
      countsLeft = undefined;
    }
    if (pending.size === 0 && !countsLeft) return;
    const ids = [...pending.keys()];
    const buckets = await this.readBuckets(projectId, ids);
    const writes = ids.flatMap((_id, i): BucketWrite[] => {
      const { added, removed } = pending.get(_id)!;
      const before = buckets[i].members;
      const after = new Set(before);
      for (const key of added) after.add(key);
      for (const key of removed) after.delete(key);
      if (after.size === before.length && before.every((key) => after.has(key))) return [];
      const written = { members: sortKeys([...after]) };
      if (this.memory?.change(_id, written)) {
        this.behind!.changed(projectId, [_id], false);
        return [];
      }
      return [{ _id, operation: bucketStatement(projectId, _id, written), written }];
    });
    await this.write(projectId, writes, countsLeft);
  }

  /** Per tag, its members by bucket (each in compareKeys order): every bucket of every tag read side by side by `_id`. */
  async read(projectId: string, tags: readonly string[]): Promise<(readonly string[])[][]> {
    if (!this.materialised) throw new Error("tag membership is the profiles' tag index on this engine");
    const ids = tags.flatMap((tag) =>
      Array.from({ length: MEMBERSHIP_BUCKETS }, (_, bucket) => bucketId(projectId, tag, bucket)),
    );
    const buckets = await this.readBuckets(projectId, ids);
    return tags.map((_, t) =>
      buckets.slice(t * MEMBERSHIP_BUCKETS, (t + 1) * MEMBERSHIP_BUCKETS).map((bucket) => bucket.members),
    );
  }

  /** The project's players_count and last-given time per tag id (the owner's from memory once read). */
  async readStats(projectId: string): Promise<TagStats> {
    await this.fill(projectId);
    const known = this.memory?.statsOf(projectId);
    if (known) return known;
    const epoch = this.memory?.epoch(projectId) ?? 0;
    const stats = parseStats((await this.members.findOne({ _id: statsId(projectId) })) as StatsDoc | null);
    this.memory?.readStats(epoch, projectId, stats);
    return stats;
  }

  /** Sets the counts of `counts`' tags (the repair pass). */
  async setCounts(projectId: string, counts: ReadonlyMap<number, number>): Promise<void> {
    if (counts.size === 0) return;
    if (this.behind) {
      const now = await this.readStats(projectId);
      const stats = { counts: new Map([...now.counts, ...counts]), seen: now.seen };
      this.memory!.changeStats(projectId, stats);
      this.behind.changed(projectId, [], true);
      return;
    }
    throwIfRefused(
      "membership write",
      await this.engine.writeAll(this.members, [
        statsStatement(projectId, { counts: new Map(counts), seen: new Map() }),
      ]),
    );
  }

  /** Whether changes are made in the owner's memory and written behind (`written` tells when they are in the database). */
  get writesBehind(): boolean {
    return this.behind !== null;
  }

  /** Resolves once every change of the project made before the call is in the database (at once unless written behind). */
  written(projectId: string): Promise<void> {
    return this.behind?.written(projectId) ?? Promise.resolve();
  }

  /** Writes every change kept in memory now (a clean stop, the end of a repair). */
  async writeBehindNow(): Promise<void> {
    await this.behind?.writeAll();
  }

  /** Unwritten documents kept in memory (a metric). */
  get waitingWrites(): number {
    return this.behind?.waiting ?? 0;
  }

  /** The owner's counts changed in memory (read once first), to be written behind. */
  private async changeCounts(projectId: string, change: CountChange): Promise<void> {
    this.memory!.changeStats(projectId, countsChanged(await this.readStats(projectId), change));
    this.behind!.changed(projectId, [], true);
  }

  /** The owner's buckets and counts of a project as its memory holds them, written in one go (write-behind). */
  private async writeRemembered(projectId: string, ids: readonly string[], stats: boolean): Promise<void> {
    const memory = this.memory!;
    const operations = ids.flatMap((_id) => {
      const bucket = memory.get(_id);
      return bucket ? [bucketStatement(projectId, _id, bucket)] : [];
    });
    const counts = stats ? memory.statsOf(projectId) : undefined;
    if (counts) operations.push(statsStatement(projectId, counts));
    throwIfRefused("membership write", await this.engine.writeAll(this.members, operations));
  }

  /**
   * Buckets of the project by `_id`: from the owner's memory (filled with the whole project first, when it fits),
   * the rest read side by side (an absent one is empty).
   */
  private async readBuckets(projectId: string, ids: readonly string[]): Promise<MemberBucket[]> {
    await this.fill(projectId);
    const known = ids.map((id) => this.memory?.get(id));
    const missing = ids.filter((_, i) => known[i] === undefined);
    const epoch = this.memory?.epoch(projectId) ?? 0;
    const docs = (await this.engine.readByIds(this.members, missing)) as (BucketDoc | null)[];
    let next = 0;
    return known.map((bucket, i) => {
      if (bucket) return bucket;
      const doc = docs[next++];
      const found = { members: parseMembers(doc?.members) };
      this.memory?.read(epoch, ids[i], found);
      return found;
    });
  }

  /**
   * The owner's memory of the project made whole by one read of its documents (by the `_id` range, from the index),
   * once: a tag change then reads no bucket. A project that does not fit is read a bucket at a time.
   */
  async fill(projectId: string): Promise<void> {
    await this.memory?.fill(projectId, async () => {
      const buckets = new Map<string, MemberBucket>();
      let stats: StatsDoc | null = null;
      await scanProject(this.members, projectId, (doc) => {
        if ("members" in doc) buckets.set(doc._id, { members: parseMembers(doc.members) });
        else stats = doc as StatsDoc;
      });
      return { buckets, stats: parseStats(stats) };
    });
  }

  /** The bucket writes and the counts' change in one write; each bucket is remembered as written once acknowledged. */
  private async write(projectId: string, writes: readonly BucketWrite[], counts?: CountChange): Promise<void> {
    // The counts first: FerretDB 1.24 reports any refused statement of an update command at index 0 (measured).
    const counted = counts ? [countsStatement(projectId, counts)] : [];
    const operations = [...counted, ...writes.map((write) => write.operation)];
    let failures: Awaited<ReturnType<Engine["writeAll"]>>;
    try {
      failures = await this.engine.writeAll(this.members, operations);
    } catch (error) {
      this.memory?.forget(writes.map(({ _id }) => _id));
      throw error;
    }
    const failed = new Set(failures.flatMap(({ index }) => (index >= counted.length ? [index - counted.length] : [])));
    this.memory?.forget(writes.filter((_, i) => failed.has(i)).map((w) => w._id));
    for (const [i, { _id, written }] of writes.entries()) if (!failed.has(i)) this.memory?.written(_id, written);
    throwIfRefused("membership write", failures);
  }
}
