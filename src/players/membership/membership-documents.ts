import type { AnyBulkWriteOperation } from "mongodb";
import { projectScopedId } from "../../db/ids.js";
import type { TagStats } from "./membership-memory.js";

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

/**
 * A page of a bucket: `members` is a JSON array of identity keys in
 * compareKeys order, one string value: FerretDB decodes a 1,250-key array in
 * ~14 ms and the same keys as one string in ~2 ms (measured at 100,000 profiles).
 */
export interface PageDoc {
  _id: string;
  project_id: string;
  tag: string;
  bucket: number;
  members: string;
}

/** Per project: players_count and the last-given time of each tag, under `t<tag id>` (tags may hold a `.`; ids never do). */
export interface StatsDoc {
  _id: string;
  project_id: string;
  counts: Record<string, number>;
  seen: Record<string, Date>;
}

/** What player_tag_members holds. */
export type MembersDoc = PageDoc | StatsDoc;

/** How a round moves the counts: players gained minus lost per tag id, and the tag ids it gave (last seen now). */
export interface CountChange {
  deltas: ReadonlyMap<number, number>;
  given: readonly number[];
  now: Date;
}

const field = (tagId: number) => `t${tagId}`;
/** The counts document's `_id`: no tag starts with `_`, so it is no page's. */
export const statsId = (projectId: string) => projectScopedId(projectId, "_counts");

export const parseMembers = (members: string | undefined): string[] =>
  members ? (JSON.parse(members) as string[]) : [];

export function parseStats(doc: StatsDoc | null): TagStats {
  const parse = <T>(record: Record<string, T> | undefined) =>
    new Map(Object.entries(record ?? {}).map(([key, value]) => [Number(key.slice(1)), value]));
  return { counts: parse(doc?.counts), seen: parse(doc?.seen) };
}

/** `stats` with a round's change of the counts applied (new maps: `stats` is left as it is). */
export function countsChanged(stats: TagStats, { deltas, given, now }: CountChange): TagStats {
  const counts = new Map(stats.counts);
  for (const [id, delta] of deltas) counts.set(id, (counts.get(id) ?? 0) + delta);
  const seen = new Map(stats.seen);
  for (const id of given) {
    const last = seen.get(id);
    if (!last || last < now) seen.set(id, now);
  }
  return { counts, seen };
}

/**
 * A page written with `members`. Its one owner serialises the writes (FerretDB, the only engine with pages),
 * so no guard is needed.
 */
export function pageStatement(
  projectId: string,
  _id: string,
  members: readonly string[],
): AnyBulkWriteOperation<MembersDoc> {
  const { tag, bucket } = parsePageId(projectId, _id);
  const filter = { _id };
  const update = { $set: { project_id: projectId, tag, bucket, members: JSON.stringify(members) } };
  return { updateOne: { filter, update, upsert: true } };
}

/** A round's change of the counts: `$inc` of each delta, `$max` of each given tag's last-given time. */
export function countsStatement(
  projectId: string,
  { deltas, given, now }: CountChange,
): AnyBulkWriteOperation<MembersDoc> {
  const update: Record<string, object> = { $set: { project_id: projectId } };
  if (deltas.size > 0) update.$inc = Object.fromEntries([...deltas].map(([id, d]) => [`counts.${field(id)}`, d]));
  if (given.length > 0) update.$max = Object.fromEntries(given.map((id) => [`seen.${field(id)}`, now]));
  return { updateOne: { filter: { _id: statsId(projectId) }, update, upsert: true } };
}

/** Counts and last-given times set as given (the owner's whole memory of them, or the repair's). */
export function statsStatement(
  projectId: string,
  { counts, seen }: Readonly<TagStats>,
): AnyBulkWriteOperation<MembersDoc> {
  const set = Object.fromEntries([
    ["project_id", projectId],
    ...[...counts].map(([id, n]) => [`counts.${field(id)}`, n]),
    ...[...seen].map(([id, at]) => [`seen.${field(id)}`, at]),
  ]);
  return { updateOne: { filter: { _id: statsId(projectId) }, update: { $set: set }, upsert: true } };
}
