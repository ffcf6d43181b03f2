import { createHash, randomUUID } from "node:crypto";
import type { AnyBulkWriteOperation } from "mongodb";

// The stored shape of the record of changed players (changed-players.ts): its documents, their entries, and the
// owner's copy of a project's record. A document is a hash shard (`<project>/<n>`, where instances without the
// owner's memory write) or an owner's page (`<project>/r<n>`, below); every reader reads both.

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

/** Shard documents a project's record is spread over without the owner: a round's statements fit one command of the embedded engine (25). */
export const SHARDS = 16;

/** One document of a project's record: entries by a hash of the identity key, the tags moved by a hash of the tag. */
export interface RecordDoc {
  _id: string;
  p?: Record<string, StoredEntry>;
  t?: Record<string, string>;
}

export type StoredEntry = { k: string; s: string; a: Date; i?: string; e?: number };

/** One document of a project's record as the owner knows it. */
export interface RecordPage {
  /** The players whose entry it holds. None: a page free for the next record (blanked, or to blank). */
  live: Set<string>;
  /** The tags the rounds of its entries moved (and of the pages whose entries these superseded). */
  tags: Set<string>;
  /** Fields it still stores whose entry is not live there (settled, or superseded by a later page). */
  stale: Set<string>;
}

/** The owner's copy of a project's record. */
export interface RememberedProject {
  entries: Map<string, ChangedPlayer>;
  /** The document holding each player's entry. */
  placed: Map<string, string>;
  docs: Map<string, RecordPage>;
  /** Every tag the project's rounds moved since it was read: what the repairs re-derive. */
  moved: Set<string>;
  /** The number of the project's next new page. */
  nextPage: number;
}

export const newStamp = () => randomUUID().replaceAll("-", "");

/** A short hash of `text`, safe as a field name (no `.` or `$`). */
export const hashOf = (text: string): string => createHash("sha1").update(text).digest("base64url").slice(0, 16);

/** A player's field in any document of the record. */
export const fieldOf = (identityKey: string): string => hashOf(identityKey);

/** The shard document of a player (`<project>/<n>`) and its field there. */
export function placeOf(projectId: string, identityKey: string): { shard: string; field: string } {
  const digest = createHash("sha1").update(identityKey).digest();
  return { shard: `${projectId}/${digest[0] % SHARDS}`, field: digest.toString("base64url").slice(0, 16) };
}

/** The `_id`s of a project's documents: "0" follows "/", so every one of the project and nothing else. */
export const projectRange = (projectId: string) => ({ $gte: `${projectId}/`, $lt: `${projectId}0` });

export const projectOf = (docId: string): string => docId.slice(0, docId.lastIndexOf("/"));

export const storedOf = ({ identityKey, into, stamp, at, erasedAt }: ChangedPlayer): StoredEntry => ({
  k: identityKey,
  s: stamp,
  a: at,
  ...(into !== null && { i: into }),
  ...(erasedAt !== null && { e: erasedAt }),
});

const entryOf = ({ k, s, a, i, e }: StoredEntry): ChangedPlayer => ({
  identityKey: k,
  into: i ?? null,
  stamp: s,
  at: a,
  erasedAt: e ?? null,
});

/** Documents by project. */
export function byProject(docs: readonly RecordDoc[]): Map<string, RecordDoc[]> {
  const projects = new Map<string, RecordDoc[]>();
  for (const doc of docs) projects.set(projectOf(doc._id), [...(projects.get(projectOf(doc._id)) ?? []), doc]);
  return projects;
}

/**
 * A project's record as its documents hold it. A player stored twice (a page not yet rewritten after a crash, or a
 * shard beside an owner's page) is its latest entry, by time then stamp, with the latest erasure mark of either.
 */
export function recordOf(docs: readonly RecordDoc[]): RememberedProject {
  const project: RememberedProject = {
    entries: new Map(),
    placed: new Map(),
    docs: new Map(),
    moved: new Set(),
    nextPage: 0,
  };
  for (const doc of docs) {
    const page: RecordPage = { live: new Set(), tags: new Set(Object.values(doc.t ?? {})), stale: new Set() };
    project.docs.set(doc._id, page);
    for (const tag of page.tags) project.moved.add(tag);
    const number = /\/r(\d+)$/.exec(doc._id);
    if (number) project.nextPage = Math.max(project.nextPage, Number(number[1]) + 1);
    for (const [field, stored] of Object.entries(doc.p ?? {})) {
      page.stale.add(field);
      const player = entryOf(stored);
      const known = project.entries.get(player.identityKey);
      const erasedAt = Math.max(known?.erasedAt ?? -1, player.erasedAt ?? -1);
      const latest = !known || player.at > known.at || (+player.at === +known.at && player.stamp > known.stamp);
      if (latest) {
        project.entries.set(player.identityKey, player);
        project.placed.set(player.identityKey, doc._id);
      }
      project.entries.get(player.identityKey)!.erasedAt = erasedAt < 0 ? null : erasedAt;
    }
  }
  for (const [identityKey, docId] of project.placed) {
    const page = project.docs.get(docId)!;
    page.live.add(identityKey);
    page.stale.delete(fieldOf(identityKey));
  }
  return project;
}

// The owner's layout of the record of changed players: each record writes its entries into one page of its own
// (`<project>/r<n>`), so what it writes is bounded by the change, not by the players waiting. FerretDB rewrites a
// whole document for any update: in 16 shards of every waiting player, a call of 100 rewrote 365 KB at 3,900 waiting.

/** Pages left empty by settled or superseded entries that a record blanks beside its own: one command in all. */
const BLANKED_PER_RECORD = 8;

/** The statements of a write of the owner's record, and what its memory becomes once they are acknowledged. */
export interface PageWrite {
  statements: AnyBulkWriteOperation<RecordDoc>[];
  apply: () => void;
}

const emptyPage = (): RecordPage => ({ live: new Set(), tags: new Set(), stale: new Set() });
const isBlank = (page: RecordPage) => page.live.size === 0 && page.tags.size === 0 && page.stale.size === 0;

/**
 * `players` (the latest entry of each) and the `tags` their round moves, written whole into one page: a page whose
 * every entry they supersede (its tags carried along), else a free one, else a new one; and up to
 * BLANKED_PER_RECORD pages that were already free emptied. A page these players leave is never blanked by the same
 * command (its statements are unordered): it is free for the records after this one.
 */
export function pageWrite(
  projectId: string,
  project: RememberedProject,
  players: readonly ChangedPlayer[],
  tags: readonly string[],
): PageWrite {
  const leaving = new Map<string, Set<string>>();
  for (const { identityKey } of players) {
    const docId = project.placed.get(identityKey);
    if (docId) leaving.set(docId, (leaving.get(docId) ?? new Set()).add(identityKey));
  }
  const emptied = [...leaving].filter(([docId, keys]) => [...project.docs.get(docId)!.live].every((k) => keys.has(k)));
  const free = [...project.docs].filter(([, page]) => page.live.size === 0);
  const target =
    emptied[0]?.[0] ??
    free.find(([, page]) => !isBlank(page))?.[0] ??
    free[0]?.[0] ??
    `${projectId}/r${project.nextPage++}`;
  const pageTags = new Set(tags);
  for (const [docId] of emptied) for (const tag of project.docs.get(docId)!.tags) pageTags.add(tag);
  const p = Object.fromEntries(players.map((player) => [fieldOf(player.identityKey), storedOf(player)]));
  const t = Object.fromEntries([...pageTags].map((tag) => [hashOf(tag), tag]));
  const blanked = free
    .filter(([docId, page]) => docId !== target && !isBlank(page))
    .slice(0, BLANKED_PER_RECORD)
    .map(([docId]) => docId);
  const statements: AnyBulkWriteOperation<RecordDoc>[] = [
    { updateOne: { filter: { _id: target }, update: { $set: { p, t } }, upsert: true } },
    ...blanked.map((docId) => ({ updateOne: { filter: { _id: docId }, update: { $set: { p: {}, t: {} } } } })),
  ];
  const apply = () => {
    for (const docId of blanked) project.docs.set(docId, emptyPage());
    for (const { identityKey } of players) leave(project, identityKey);
    project.docs.set(target, {
      live: new Set(players.map((player) => player.identityKey)),
      tags: pageTags,
      stale: new Set(),
    });
    for (const player of players) {
      project.entries.set(player.identityKey, player);
      project.placed.set(player.identityKey, target);
    }
    for (const tag of tags) project.moved.add(tag);
  };
  return { statements, apply };
}

/** The player's entry is no longer live where it was stored (settled, or superseded): its page keeps the field. */
export function leave(project: RememberedProject, identityKey: string): void {
  const docId = project.placed.get(identityKey);
  if (docId === undefined) return;
  project.placed.delete(identityKey);
  const page = project.docs.get(docId)!;
  page.live.delete(identityKey);
  page.stale.add(fieldOf(identityKey));
}

/** At a clean stop: every free page blanked, and the fields a live page keeps beyond its entries removed. */
export function cleanStopWrite(project: RememberedProject): PageWrite {
  const written = [...project.docs].filter(
    ([, page]) => !isBlank(page) && (page.live.size === 0 || page.stale.size > 0),
  );
  const statements: AnyBulkWriteOperation<RecordDoc>[] = written.map(([docId, page]) => {
    const update =
      page.live.size === 0
        ? { $set: { p: {}, t: {} } }
        : { $unset: Object.fromEntries([...page.stale].map((field) => [`p.${field}`, "" as const])) };
    return { updateOne: { filter: { _id: docId }, update } };
  });
  const apply = () => {
    for (const [docId, page] of written)
      project.docs.set(docId, page.live.size === 0 ? emptyPage() : { ...page, stale: new Set() });
  };
  return { statements, apply };
}
