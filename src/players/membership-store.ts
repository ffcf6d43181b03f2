import type { Engine } from "../db/engine.js";
import type { Db } from "mongodb";
import { throwIfRefused } from "../db/batched-write.js";
import { isDuplicateKeyCode } from "../db/errors.js";
import { projectScopedId } from "../db/ids.js";
import { ContentionError } from "../errors.js";
import { sortKeys } from "./key-order.js";
import { MembershipMemory, type MemberBucket } from "./membership-memory.js";

/**
 * Members of a tag are spread over this many bucket documents by a hash of
 * their identity key, so that no document grows with the whole tag and a
 * search reads a fixed number of documents per tag.
 */
export const MEMBERSHIP_BUCKETS = 8;
/** The stored layout; the repair pass rebuilds every bucket when the database holds another. */
export const MEMBERSHIP_LAYOUT = `${MEMBERSHIP_BUCKETS} buckets, sorted keys as one JSON string`;
/** Times a write re-reads a bucket another instance wrote meanwhile before it gives up. */
const WRITE_ATTEMPTS = 10;

/**
 * `members` is a JSON array of identity keys in compareKeys order, one string
 * value: FerretDB decodes a 1,250-key array in ~14 ms and the same keys as one
 * string in ~2 ms (measured at 100,000 profiles). `version` guards the
 * read-modify-write where several instances write (MongoDB).
 */
interface MembershipDoc {
  _id: string;
  project_id: string;
  tag: string;
  bucket: number;
  version: number;
  members: string;
}

interface LayoutDoc {
  _id: string;
  layout: string;
}

/** Players who gained and lost one tag. */
export interface MembershipChange {
  tag: string;
  added: readonly string[];
  removed: readonly string[];
}

/** What one write does to one bucket document. */
interface BucketChange {
  tag: string;
  bucket: number;
  added: Set<string>;
  removed: Set<string>;
}

/**
 * The player_tag_members collection: per project and tag, the identity keys
 * carrying the tag, in MEMBERSHIP_BUCKETS documents addressed by `_id`
 * `<project>/<tag>/<bucket>`. A write reads each bucket it changes and writes
 * the bucket's new set back: adding a member twice or removing it twice
 * leaves the same set, so writing the same change twice is harmless.
 */
export class MembershipStore {
  private readonly members;
  private readonly layout;
  private readonly memory: MembershipMemory | null;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.members = db.collection<MembershipDoc>("player_tag_members");
    this.layout = db.collection<LayoutDoc>("player_tag_members_layout");
    this.memory = engine.ownerMemory && new MembershipMemory(engine.ownerMemory);
  }

  /** The bucket documents a change writes: the caller serialises writes to each (FerretDB loses concurrent ones). */
  documentIds(projectId: string, changes: readonly MembershipChange[]): string[] {
    return [...byDocument(projectId, changes).keys()];
  }

  /**
   * Applies `changes`, a key in both `added` and `removed` of one tag ending
   * removed. Each bucket is read and written back if its set moved; on
   * MongoDB the write holds only if the bucket is still at the version read,
   * and a bucket another instance wrote meanwhile is read again.
   */
  async apply(projectId: string, changes: readonly MembershipChange[]): Promise<void> {
    let pending = byDocument(projectId, changes);
    for (let attempt = 1; pending.size > 0; attempt++) {
      if (attempt > WRITE_ATTEMPTS) throw new ContentionError("tag membership: buckets kept changing under the write");
      const ids = [...pending.keys()];
      const buckets = await this.readBuckets(ids);
      const writes = ids.flatMap((_id, i) => {
        const { tag, bucket, added, removed } = pending.get(_id)!;
        const before = buckets[i].members;
        const after = new Set(before);
        for (const key of added) after.add(key);
        for (const key of removed) after.delete(key);
        if (after.size === before.length && before.every((key) => after.has(key))) return [];
        const { version } = buckets[i];
        const filter = this.engine.isolatesUpdates ? { _id, version } : { _id };
        const members = sortKeys([...after]);
        const update = {
          $set: { project_id: projectId, tag, bucket, members: JSON.stringify(members) },
          $inc: { version: 1 },
        };
        return [{ _id, filter, update, written: { version: version + 1, members } }];
      });
      const failures = await this.write(writes);
      throwIfRefused(
        "membership write",
        failures.filter((failure) => !isDuplicateKeyCode(failure.code)),
      );
      // A guard that no longer matched made its upsert a duplicate key: that bucket is read and written again.
      const lost = new Set(failures.map((failure) => writes[failure.index]._id));
      pending = new Map([...pending].filter(([_id]) => lost.has(_id)));
    }
  }

  /** Per tag, its members by bucket (each in compareKeys order): every bucket of every tag read side by side by `_id`. */
  async read(projectId: string, tags: readonly string[]): Promise<(readonly string[])[][]> {
    const ids = tags.flatMap((tag) =>
      Array.from({ length: MEMBERSHIP_BUCKETS }, (_, bucket) => bucketId(projectId, tag, bucket)),
    );
    const buckets = await this.readBuckets(ids);
    return tags.map((_, t) =>
      buckets.slice(t * MEMBERSHIP_BUCKETS, (t + 1) * MEMBERSHIP_BUCKETS).map((bucket) => bucket.members),
    );
  }

  /** Buckets by `_id`: from the owner's memory, the rest read side by side (an absent one is empty, at version 0). */
  private async readBuckets(ids: readonly string[]): Promise<MemberBucket[]> {
    const known = ids.map((id) => this.memory?.get(id));
    const missing = ids.filter((_, i) => known[i] === undefined);
    const epoch = this.memory?.epoch ?? 0;
    const docs = await this.engine.readByIds(this.members, missing);
    let next = 0;
    return known.map((bucket, i) => {
      if (bucket) return bucket;
      const doc = docs[next++];
      const found = { version: doc?.version ?? 0, members: parseMembers(doc?.members) };
      this.memory?.read(epoch, ids[i], found);
      return found;
    });
  }

  /** The bucket writes, each remembered as written once acknowledged; the failed ones answered by index. */
  private async write(writes: readonly { _id: string; filter: object; update: object; written: MemberBucket }[]) {
    let failures: Awaited<ReturnType<Engine["writeAll"]>>;
    try {
      failures = await this.engine.writeAll(
        this.members,
        writes.map(({ filter, update }) => ({ updateOne: { filter, update, upsert: true } })),
      );
    } catch (error) {
      this.memory?.forget(writes.map(({ _id }) => _id));
      throw error;
    }
    const failed = new Set(failures.map((failure) => writes[failure.index]._id));
    if (failed.size > 0) this.memory?.forget(failed);
    for (const { _id, written } of writes) if (!failed.has(_id)) this.memory?.written(_id, written);
    return failures;
  }

  /** Replaces the whole membership of `tag` (the repair pass); versions move on, so no earlier read's guard holds. */
  async replace(projectId: string, tag: string, members: readonly string[]): Promise<void> {
    const buckets = byBucket(members);
    const operations = Array.from({ length: MEMBERSHIP_BUCKETS }, (_, bucket) => ({
      updateOne: {
        filter: { _id: bucketId(projectId, tag, bucket) },
        update: {
          $set: { project_id: projectId, tag, bucket, members: JSON.stringify(sortKeys(buckets.get(bucket) ?? [])) },
          $inc: { version: 1 },
        },
        upsert: true,
      },
    }));
    const ids = operations.map((operation) => operation.updateOne.filter._id);
    // Forgotten before and after: a search between the two would keep what the replacement is about to change.
    this.memory?.forget(ids);
    try {
      throwIfRefused("membership write", await this.engine.writeAll(this.members, operations));
    } finally {
      this.memory?.forget(ids);
    }
  }

  async dropAll(): Promise<void> {
    try {
      await this.members.deleteMany({});
    } finally {
      this.memory?.forgetAll();
    }
  }

  async storedLayout(): Promise<string | null> {
    return (await this.layout.findOne({ _id: "layout" }))?.layout ?? null;
  }

  async saveLayout(): Promise<void> {
    await this.layout.updateOne({ _id: "layout" }, { $set: { layout: MEMBERSHIP_LAYOUT } }, { upsert: true });
  }
}

const bucketId = (projectId: string, tag: string, bucket: number) => projectScopedId(projectId, `${tag}/${bucket}`);

const parseMembers = (members: string | undefined): string[] => (members ? (JSON.parse(members) as string[]) : []);

/** `changes` per bucket document they touch, by `_id`. */
function byDocument(projectId: string, changes: readonly MembershipChange[]): Map<string, BucketChange> {
  const documents = new Map<string, BucketChange>();
  const of = (tag: string, key: string) => {
    const bucket = bucketOf(key);
    const _id = bucketId(projectId, tag, bucket);
    let change = documents.get(_id);
    if (!change) documents.set(_id, (change = { tag, bucket, added: new Set(), removed: new Set() }));
    return change;
  };
  for (const { tag, added, removed } of changes) {
    for (const key of added) of(tag, key).added.add(key);
    for (const key of removed) of(tag, key).removed.add(key);
  }
  return documents;
}

/** FNV-1a of the identity key, modulo the bucket count: stable across processes and versions. */
export function bucketOf(identityKey: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < identityKey.length; i++) {
    hash ^= identityKey.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % MEMBERSHIP_BUCKETS;
}

/** `keys` grouped by their bucket, each group in the order of `keys`. */
export function byBucket(keys: readonly string[]): Map<number, string[]> {
  const buckets = new Map<number, string[]>();
  for (const key of keys) {
    const bucket = bucketOf(key);
    const members = buckets.get(bucket);
    if (members) members.push(key);
    else buckets.set(bucket, [key]);
  }
  return buckets;
}
