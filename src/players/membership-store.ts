import type { Engine } from "../db/engine.js";
import type { Db } from "mongodb";
import { throwIfRefused } from "../db/batched-write.js";
import { isDuplicateKeyCode } from "../db/errors.js";
import { projectScopedId } from "../db/ids.js";
import { ContentionError } from "../errors.js";
import { sortKeys } from "./key-order.js";

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

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.members = db.collection<MembershipDoc>("player_tag_members");
    this.layout = db.collection<LayoutDoc>("player_tag_members_layout");
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
      const docs = await this.engine.readByIds(this.members, ids);
      const writes = ids.flatMap((_id, i) => {
        const { tag, bucket, added, removed } = pending.get(_id)!;
        const before = parseMembers(docs[i]?.members);
        const after = new Set(before);
        for (const key of added) after.add(key);
        for (const key of removed) after.delete(key);
        if (after.size === before.length && before.every((key) => after.has(key))) return [];
        const version = docs[i]?.version ?? 0;
        const filter = this.engine.isolatesUpdates ? { _id, version } : { _id };
        const members = JSON.stringify(sortKeys([...after]));
        return [
          { _id, filter, update: { $set: { project_id: projectId, tag, bucket, members }, $inc: { version: 1 } } },
        ];
      });
      const failures = await this.engine.writeAll(
        this.members,
        writes.map(({ filter, update }) => ({ updateOne: { filter, update, upsert: true } })),
      );
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
  async read(projectId: string, tags: readonly string[]): Promise<string[][][]> {
    const ids = tags.flatMap((tag) =>
      Array.from({ length: MEMBERSHIP_BUCKETS }, (_, bucket) => bucketId(projectId, tag, bucket)),
    );
    const docs = await this.engine.readByIds(this.members, ids);
    return tags.map((_, t) =>
      docs.slice(t * MEMBERSHIP_BUCKETS, (t + 1) * MEMBERSHIP_BUCKETS).map((doc) => parseMembers(doc?.members)),
    );
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
    const failures = await this.engine.writeAll(this.members, operations);
    throwIfRefused("membership write", failures);
  }

  async dropAll(): Promise<void> {
    await this.members.deleteMany({});
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
