import { createHash, randomUUID } from "node:crypto";

// The stored shape of the record of changed players (changed-players.ts): its shard documents, their entries, and
// the owner's copy of a project's record.

/** A player changed since the rollups last followed it: its latest change only. */
export interface ChangedPlayer {
  identityKey: string;
  /** The player it was folded into (a fold's source), else null. */
  into: string | null;
  /** The round (or repair) that changed it last: only a resync carrying this stamp settles it. */
  stamp: string;
  at: Date;
  /**
   * The queue segment of the player's erasure, else null: until it is applied the stored history is the erased
   * player's, counted as no one's now; after it, a new player's. A later change of the same key keeps it.
   */
  erasedAt: number | null;
}

/** Documents a project's record is spread over: a round's statements fit one command of the embedded engine (25). */
export const SHARDS = 16;

/** One shard of a project's record: entries by a hash of the identity key, the tags moved by a hash of the tag. */
export interface ShardDoc {
  _id: string;
  p?: Record<string, StoredEntry>;
  t?: Record<string, string>;
}

export type StoredEntry = { k: string; s: string; a: Date; i?: string; e?: number };

/** The owner's copy of a project's record: entries by identity key, tags by shard, settled fields still stored. */
export interface RememberedProject {
  entries: Map<string, ChangedPlayer>;
  tags: Map<string, Set<string>>;
  settled: Map<string, Set<string>>;
}

export const newStamp = () => randomUUID().replaceAll("-", "");

/** A short hash of `text`, safe as a field name (no `.` or `$`). */
export const hashOf = (text: string): string => createHash("sha1").update(text).digest("base64url").slice(0, 16);

/** The shard document of a player (`<project>/<n>`) and its field there. */
export function placeOf(projectId: string, identityKey: string): { shard: string; field: string } {
  const digest = createHash("sha1").update(identityKey).digest();
  return { shard: `${projectId}/${digest[0] % SHARDS}`, field: digest.toString("base64url").slice(0, 16) };
}

export const projectOf = (shardId: string): string => shardId.slice(0, shardId.lastIndexOf("/"));

export const addTo = (map: Map<string, Set<string>>, key: string, value: string) =>
  void map.set(key, (map.get(key) ?? new Set()).add(value));

export const storedOf = ({ identityKey, into, stamp, at, erasedAt }: ChangedPlayer): StoredEntry => ({
  k: identityKey,
  s: stamp,
  a: at,
  ...(into !== null && { i: into }),
  ...(erasedAt !== null && { e: erasedAt }),
});

export const entriesOf = (doc: ShardDoc): ChangedPlayer[] =>
  Object.values(doc.p ?? {}).map(({ k, s, a, i, e }) => ({
    identityKey: k,
    into: i ?? null,
    stamp: s,
    at: a,
    erasedAt: e ?? null,
  }));

/** Shard documents by project. */
export function byProject(docs: readonly ShardDoc[]): Map<string, ShardDoc[]> {
  const projects = new Map<string, ShardDoc[]>();
  for (const doc of docs) projects.set(projectOf(doc._id), [...(projects.get(projectOf(doc._id)) ?? []), doc]);
  return projects;
}

/** A project's record as its shard documents hold it (nothing settled in memory). */
export function recordOf(docs: readonly ShardDoc[]): RememberedProject {
  const project: RememberedProject = { entries: new Map(), tags: new Map(), settled: new Map() };
  for (const doc of docs) {
    for (const player of entriesOf(doc)) project.entries.set(player.identityKey, player);
    project.tags.set(doc._id, new Set(Object.values(doc.t ?? {})));
  }
  return project;
}
