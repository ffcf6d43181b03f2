import { projectScopedId } from "../../db/ids.js";

/**
 * Members of a tag are spread over this many buckets by a hash of their
 * identity key, so that a search can intersect tags bucket by bucket; each
 * bucket is stored as pages of bounded size (membership-pages.ts).
 */
export const MEMBERSHIP_BUCKETS = 8;

/** Players who gained and lost one tag. */
export interface MembershipChange {
  tag: string;
  added: readonly string[];
  removed: readonly string[];
}

/** What one write does to one bucket. */
export interface BucketChange {
  tag: string;
  bucket: number;
  added: Set<string>;
  removed: Set<string>;
}

/** A bucket's id, `<project>/<tag>/<bucket>`: what its pages' `_id`s start with, and its lock. */
export const bucketId = (projectId: string, tag: string, bucket: number) =>
  projectScopedId(projectId, `${tag}/${bucket}`);

/** A page document's `_id`: `<bucket id>/<low>`, `low` the page's first key ("" for a bucket's first page). */
export const pageId = (bucketOfPage: string, low: string) => `${bucketOfPage}/${low}`;

/** The `_id`s of every page of a bucket: those starting with "<bucket id>/" ("0" follows "/"). */
export const bucketRange = (bucketOfPage: string) => ({ $gte: `${bucketOfPage}/`, $lt: `${bucketOfPage}0` });

/** What a page `_id` of the project names (tags hold no "/"; a key may). */
export function parsePageId(projectId: string, id: string) {
  const prefix = projectScopedId(projectId, "").length;
  const tagEnd = id.indexOf("/", prefix);
  const bucketEnd = id.indexOf("/", tagEnd + 1);
  return {
    bucketId: id.slice(0, bucketEnd),
    tag: id.slice(prefix, tagEnd),
    bucket: Number(id.slice(tagEnd + 1, bucketEnd)),
    low: id.slice(bucketEnd + 1),
  };
}

/** `changes` per bucket they touch, by bucket id. */
export function byBucket(projectId: string, changes: readonly MembershipChange[]): Map<string, BucketChange> {
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
