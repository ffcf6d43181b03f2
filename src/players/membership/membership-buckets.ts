import { projectScopedId } from "../../db/ids.js";

/**
 * Members of a tag are spread over this many bucket documents by a hash of
 * their identity key, so that no document grows with the whole tag and a
 * search reads a fixed number of documents per tag.
 */
export const MEMBERSHIP_BUCKETS = 8;

/** Players who gained and lost one tag. */
export interface MembershipChange {
  tag: string;
  added: readonly string[];
  removed: readonly string[];
}

/** What one write does to one bucket document. */
export interface BucketChange {
  tag: string;
  bucket: number;
  added: Set<string>;
  removed: Set<string>;
}

/** A bucket document's `_id`: `<project>/<tag>/<bucket>`. */
export const bucketId = (projectId: string, tag: string, bucket: number) =>
  projectScopedId(projectId, `${tag}/${bucket}`);

/** The tag and bucket number of a bucket `_id` of the project (tags hold no "/"). */
export function parseBucketId(projectId: string, id: string): { tag: string; bucket: number } {
  const rest = id.slice(projectScopedId(projectId, "").length);
  const slash = rest.lastIndexOf("/");
  return { tag: rest.slice(0, slash), bucket: Number(rest.slice(slash + 1)) };
}

/** `changes` per bucket document they touch, by `_id`. */
export function byDocument(projectId: string, changes: readonly MembershipChange[]): Map<string, BucketChange> {
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
