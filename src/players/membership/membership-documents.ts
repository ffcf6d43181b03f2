import type { AnyBulkWriteOperation } from "mongodb";
import { projectScopedId } from "../../db/ids.js";
import { parsePageId } from "./membership-buckets.js";
import type { TagStats } from "./membership-memory.js";

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
