import type { AnyBulkWriteOperation, Db } from "mongodb";
import { batchedWrite } from "../db/batched-write.js";
import { projectScopedId } from "../db/ids.js";

/**
 * Members of a tag are spread over this many bucket documents by a hash of
 * their identity key, so that no document grows with the whole tag and a
 * search reads a fixed number of documents per tag. The repair pass rebuilds
 * every bucket when the stored layout has another count.
 */
export const MEMBERSHIP_BUCKETS = 8;

interface MembershipDoc {
  _id: string;
  project_id: string;
  tag: string;
  bucket: number;
  members: string[];
}

interface LayoutDoc {
  _id: string;
  buckets: number;
}

/** Players who gained and lost one tag. */
export interface MembershipChange {
  tag: string;
  added: readonly string[];
  removed: readonly string[];
}

/**
 * The player_tag_members collection: per project and tag, the identity keys
 * carrying the tag, in MEMBERSHIP_BUCKETS documents addressed by `_id`
 * `<project>/<tag>/<bucket>`. Adds and removes are `$addToSet`/`$pullAll`, so
 * writing the same change twice is harmless.
 */
export class MembershipStore {
  private readonly members;
  private readonly layout;

  constructor(db: Db) {
    this.members = db.collection<MembershipDoc>("player_tag_members");
    this.layout = db.collection<LayoutDoc>("player_tag_members_layout");
  }

  /** The bucket documents a change writes: the caller serialises writes to each (FerretDB loses concurrent ones). */
  documentIds(projectId: string, changes: readonly MembershipChange[]): string[] {
    const ids = new Set<string>();
    for (const { tag, added, removed } of changes) {
      for (const key of [...added, ...removed]) ids.add(bucketId(projectId, tag, bucketOf(key)));
    }
    return [...ids];
  }

  async apply(projectId: string, changes: readonly MembershipChange[]): Promise<void> {
    const operations: AnyBulkWriteOperation<MembershipDoc>[] = [];
    for (const { tag, added, removed } of changes) {
      for (const [bucket, keys] of byBucket(added)) {
        operations.push({
          updateOne: {
            filter: { _id: bucketId(projectId, tag, bucket) },
            update: { $addToSet: { members: { $each: keys } }, $setOnInsert: { project_id: projectId, tag, bucket } },
            upsert: true,
          },
        });
      }
      for (const [bucket, keys] of byBucket(removed)) {
        operations.push({
          updateOne: {
            filter: { _id: bucketId(projectId, tag, bucket) },
            // $pullAll, not $pull with $in: FerretDB 1.24 accepts the latter and removes nothing (measured).
            update: { $pullAll: { members: keys } },
          },
        });
      }
    }
    const failures = await batchedWrite(this.members, operations);
    if (failures.length > 0) throw new Error(`membership write failed with code ${failures[0].code}`);
  }

  /** Every member of `tag`, unordered: its buckets read side by side by `_id`. */
  async read(projectId: string, tag: string): Promise<string[][]> {
    const docs = await Promise.all(
      Array.from({ length: MEMBERSHIP_BUCKETS }, (_, bucket) =>
        this.members.findOne({ _id: bucketId(projectId, tag, bucket) }, { projection: { members: 1 } }),
      ),
    );
    return docs.map((doc) => doc?.members ?? []);
  }

  /** Replaces the whole membership of `tag` (the repair pass). */
  async replace(projectId: string, tag: string, members: readonly string[]): Promise<void> {
    const buckets = byBucket(members);
    const operations = Array.from({ length: MEMBERSHIP_BUCKETS }, (_, bucket) => ({
      replaceOne: {
        filter: { _id: bucketId(projectId, tag, bucket) },
        replacement: { project_id: projectId, tag, bucket, members: buckets.get(bucket) ?? [] },
        upsert: true,
      },
    }));
    const failures = await batchedWrite(this.members, operations);
    if (failures.length > 0) throw new Error(`membership write failed with code ${failures[0].code}`);
  }

  async dropAll(): Promise<void> {
    await this.members.deleteMany({});
  }

  async storedLayout(): Promise<number | null> {
    return (await this.layout.findOne({ _id: "layout" }))?.buckets ?? null;
  }

  async saveLayout(): Promise<void> {
    await this.layout.updateOne({ _id: "layout" }, { $set: { buckets: MEMBERSHIP_BUCKETS } }, { upsert: true });
  }
}

const bucketId = (projectId: string, tag: string, bucket: number) => projectScopedId(projectId, `${tag}/${bucket}`);

/** FNV-1a of the identity key, modulo the bucket count: stable across processes and versions. */
export function bucketOf(identityKey: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < identityKey.length; i++) {
    hash ^= identityKey.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % MEMBERSHIP_BUCKETS;
}

function byBucket(keys: readonly string[]): Map<number, string[]> {
  const buckets = new Map<number, string[]>();
  for (const key of keys) {
    const bucket = bucketOf(key);
    buckets.set(bucket, [...(buckets.get(bucket) ?? []), key]);
  }
  return buckets;
}
