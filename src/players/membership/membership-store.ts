import type { AnyBulkWriteOperation, Db, Filter } from "mongodb";
import { type Engine, throwIfRefused } from "../../db/engine.js";
import { scanProject } from "../../db/project-scan.js";
import { sideBySide } from "../../db/gate.js";
import type { Logger } from "../../log.js";
import {
  bucketId,
  bucketRange,
  byBucket,
  MEMBERSHIP_BUCKETS,
  pageId,
  parsePageId,
  type BucketChange,
  type MembershipChange,
  countsChanged,
  countsStatement,
  pageStatement,
  parseMembers,
  parseStats,
  statsId,
  statsStatement,
  type CountChange,
  type MembersDoc,
  type PageDoc,
  type StatsDoc,
} from "./membership-documents.js";
import { MembershipMemory, type TagStats } from "./membership-memory.js";
import {
  assembleBucket,
  membersOf,
  moveBucket,
  pageOf,
  writeOrder,
  type MemberBucket,
  type MemberPage,
} from "./membership-pages.js";
import { MembershipWriteBehind } from "./membership-write-behind.js";

/** A bucket write: its pages' statements, and the bucket as the database holds it once acknowledged. */
interface BucketWrite {
  _id: string;
  operations: AnyBulkWriteOperation<MembersDoc>[];
  written: MemberBucket;
}

/**
 * The player_tag_members collection: per project and tag, the identity keys
 * carrying the tag, in MEMBERSHIP_BUCKETS buckets `<project>/<tag>/<bucket>`,
 * each stored as pages of at most PAGE_KEYS keys by `_id` `<bucket>/<low>`,
 * and per project one document of its tags' players_count and last-given
 * times, so a round's membership and counts are one command. A write reads
 * each bucket it changes and writes back only the pages that moved: adding a
 * member twice or removing it twice leaves the same set, so writing the same
 * change twice is harmless. The owner of an embedded
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
      new MembershipWriteBehind({ write: (projectId, ids) => this.writeRemembered(projectId, ids), log });
  }

  /**
   * Whether membership is kept in bucket pages here. Where indexes answer queries (MongoDB) it is not: the
   * profiles' multikey tag index answers search and cohorts (ProfileStore), and only the counts are written.
   */
  get materialised(): boolean {
    return !this.engine.queryIndexes;
  }

  /** The buckets a change writes: the caller serialises writes to each (FerretDB loses concurrent ones). */
  bucketIds(projectId: string, changes: readonly MembershipChange[]): string[] {
    return this.materialised ? [...byBucket(projectId, changes).keys()] : [];
  }

  /**
   * Applies `changes` (a key in both `added` and `removed` of one tag ends
   * removed) and `counts`. Each bucket is read and the pages that moved
   * written back, in one command with the counts (the caller holds their
   * locks). The owner changes its memory instead, and writes through only the
   * buckets its budget cannot hold. Where membership is not materialised, only the counts.
   */
  async apply(projectId: string, changes: readonly MembershipChange[], counts?: CountChange): Promise<void> {
    const pending = this.materialised ? byBucket(projectId, changes) : new Map<string, BucketChange>();
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
      const moved = moveBucket(buckets[i], added, removed);
      if (!moved) return [];
      const pageIds = moved.written.map((low) => pageId(_id, low));
      if (this.memory?.change(_id, moved.bucket)) {
        this.behind!.changed(projectId, pageIds);
        return [];
      }
      const operations = writeOrder(pageIds).map((id) => this.pageStatement(projectId, moved.bucket, id));
      return [{ _id, operations, written: moved.bucket }];
    });
    await this.write(projectId, writes, countsLeft);
  }

  /** Per tag, its members by bucket (each in compareKeys order): every bucket of every tag read side by side by `_id`. */
  async read(projectId: string, tags: readonly string[]): Promise<(readonly string[])[][]> {
    return (await this.readTags(projectId, tags)).map((buckets) => buckets.map(membersOf));
  }

  /** Per tag, how many players carry it: its pages' lengths summed, no list of its members built. */
  async sizes(projectId: string, tags: readonly string[]): Promise<number[]> {
    const count = (buckets: MemberBucket[]) =>
      buckets.reduce((n, { pages }) => pages.reduce((m, page) => m + page.members.length, n), 0);
    return (await this.readTags(projectId, tags)).map(count);
  }

  /** Per tag, its buckets. */
  private async readTags(projectId: string, tags: readonly string[]): Promise<MemberBucket[][]> {
    if (!this.materialised) throw new Error("tag membership is the profiles' tag index on this engine");
    const ids = tags.flatMap((tag) =>
      Array.from({ length: MEMBERSHIP_BUCKETS }, (_, bucket) => bucketId(projectId, tag, bucket)),
    );
    const buckets = await this.readBuckets(projectId, ids);
    return tags.map((_, t) => buckets.slice(t * MEMBERSHIP_BUCKETS, (t + 1) * MEMBERSHIP_BUCKETS));
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
      this.behind.changed(projectId, [statsId(projectId)]);
      return;
    }
    throwIfRefused(
      "membership write",
      await this.engine.writeAll(this.members, [
        statsStatement(projectId, { counts: new Map(counts), seen: new Map() }),
      ]),
    );
  }

  /**
   * What a call waits for of `work`, which follows the project's membership into the database (a round's resync):
   * all of it where membership is written through; nothing where it is written behind, since `work` waits for that.
   */
  callWaitsFor(work: Promise<void>): Promise<void> {
    return this.behind ? Promise.resolve() : work;
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
    this.behind!.changed(projectId, [statsId(projectId)]);
  }

  /** The owner's pages and counts of a project as its memory holds them, written in one go (write-behind). */
  private async writeRemembered(projectId: string, ids: readonly string[]): Promise<void> {
    const memory = this.memory!;
    const stats = ids.includes(statsId(projectId));
    const operations = writeOrder(ids.filter((id) => id !== statsId(projectId))).flatMap((id) => {
      const bucket = memory.get(parsePageId(projectId, id).bucketId);
      return bucket ? [this.pageStatement(projectId, bucket, id)] : [];
    });
    const counts = stats ? memory.statsOf(projectId) : undefined;
    if (counts) operations.push(statsStatement(projectId, counts));
    throwIfRefused("membership write", await this.engine.writeAll(this.members, operations));
  }

  /** The statement writing the page `id` of `bucket` as it is now. */
  private pageStatement(projectId: string, bucket: MemberBucket, id: string): AnyBulkWriteOperation<MembersDoc> {
    return pageStatement(projectId, id, pageOf(bucket, parsePageId(projectId, id).low)?.members ?? []);
  }

  /**
   * Buckets of the project by id: from the owner's memory (filled with the whole project first, when it fits),
   * the rest read side by side, each by its pages' `_id` range (an absent one is empty).
   */
  private async readBuckets(projectId: string, ids: readonly string[]): Promise<MemberBucket[]> {
    await this.fill(projectId);
    const known = ids.map((id) => this.memory?.get(id));
    const missing = ids.filter((_, i) => known[i] === undefined);
    const epoch = this.memory?.epoch(projectId) ?? 0;
    const read = await sideBySide(missing, async (id) => {
      const docs = await this.members.find({ _id: bucketRange(id) } as Filter<MembersDoc>).toArray();
      return assembleBucket(docs.map((doc) => this.pageOf(projectId, doc as PageDoc)));
    });
    let next = 0;
    return known.map((bucket, i) => {
      if (bucket) return bucket;
      const found = read[next++];
      this.memory?.read(epoch, ids[i], found);
      return found;
    });
  }

  private pageOf(projectId: string, doc: PageDoc): MemberPage {
    return { low: parsePageId(projectId, doc._id).low, members: parseMembers(doc.members) };
  }

  /**
   * The owner's memory of the project made whole by one read of its documents (by the `_id` range, from the index),
   * once: a tag change then reads no bucket. A project that does not fit is read a bucket at a time.
   */
  async fill(projectId: string): Promise<void> {
    await this.memory?.fill(projectId, async () => {
      const pages = new Map<string, MemberPage[]>();
      let stats: StatsDoc | null = null;
      await scanProject(this.members, projectId, (doc) => {
        if (!("members" in doc)) return void (stats = doc as StatsDoc);
        const id = parsePageId(projectId, doc._id).bucketId;
        (pages.get(id) ?? pages.set(id, []).get(id)!).push(this.pageOf(projectId, doc));
      });
      const buckets = new Map([...pages].map(([id, stored]) => [id, assembleBucket(stored)]));
      return { buckets, stats: parseStats(stats) };
    });
  }

  /** The bucket writes and the counts' change in one write; each bucket is remembered as written once acknowledged. */
  private async write(projectId: string, writes: readonly BucketWrite[], counts?: CountChange): Promise<void> {
    // The counts first: FerretDB 1.24 reports any refused statement of an update command at index 0 (measured).
    const counted = counts ? [countsStatement(projectId, counts)] : [];
    const operations = [...counted, ...writes.flatMap((write) => write.operations)];
    const bucketOf = writes.flatMap((write, i) => write.operations.map(() => i));
    let failures: Awaited<ReturnType<Engine["writeAll"]>>;
    try {
      failures = await this.engine.writeAll(this.members, operations);
    } catch (error) {
      this.memory?.forget(writes.map(({ _id }) => _id));
      throw error;
    }
    const failed = new Set(
      failures.flatMap(({ index }) => (index >= counted.length ? [bucketOf[index - counted.length]] : [])),
    );
    this.memory?.forget(writes.filter((_, i) => failed.has(i)).map((w) => w._id));
    for (const [i, { _id, written }] of writes.entries()) if (!failed.has(i)) this.memory?.written(_id, written);
    throwIfRefused("membership write", failures);
  }
}
