import type { AnyBulkWriteOperation } from "mongodb";
import {
  fieldOf,
  hashOf,
  storedOf,
  type ChangedPlayer,
  type RecordDoc,
  type RecordPage,
  type RememberedProject,
} from "./changed-player-shards.js";

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
