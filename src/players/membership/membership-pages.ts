import { compareKeys, sortKeys } from "../rules/identity-key.js";

/**
 * Keys a page holds at most: a change of one player writes one page of at
 * most this many keys (~3.5 KB at 12-character keys) however large its tag.
 */
export const PAGE_KEYS = 256;

/** One page of a bucket: its keys from `low` up to the next page's `low`, in compareKeys order. */
export interface MemberPage {
  low: string;
  members: readonly string[];
}

/** A bucket's members: its pages in `low` order, the first's `low` "" (shared: read only). */
export interface MemberBucket {
  pages: readonly MemberPage[];
}

/** A bucket that moved: as it is now, and the `low` of each page to write (new ones and changed ones). */
export interface BucketMove {
  bucket: MemberBucket;
  written: string[];
}

export const EMPTY_BUCKET: MemberBucket = { pages: [{ low: "", members: [] }] };

/**
 * A bucket of several pages joined once: a bucket never changes (a move makes a new one), so a read of it answers
 * the same list each time, which the charts' readers keep their work on (events/kpis/player-activity.ts).
 */
const joined = new WeakMap<MemberBucket, readonly string[]>();

/** Every member of the bucket, in compareKeys order. */
export function membersOf(bucket: MemberBucket): readonly string[] {
  if (bucket.pages.length === 1) return bucket.pages[0].members;
  let members = joined.get(bucket);
  if (!members) joined.set(bucket, (members = bucket.pages.flatMap((page) => page.members)));
  return members;
}

/** The page of `bucket` with that `low`. */
export const pageOf = ({ pages }: MemberBucket, low: string): MemberPage | undefined =>
  pages.find((page) => page.low === low);

/**
 * A bucket from its stored pages, in any order. Each page's keys are cut to
 * its range: a write cut short between the pages of a split (the new page is
 * written first) leaves copies in the page below, which its range excludes.
 */
export function assembleBucket(stored: readonly MemberPage[]): MemberBucket {
  const pages = [...stored].sort((a, b) => compareKeys(a.low, b.low));
  if (pages[0]?.low !== "") pages.unshift({ low: "", members: [] });
  return {
    pages: pages.map((page, i) => {
      const next = pages[i + 1]?.low;
      const end = next === undefined ? page.members.length : firstFrom(page.members, next);
      return end === page.members.length ? page : { low: page.low, members: page.members.slice(0, end) };
    }),
  };
}

/**
 * `bucket` with `added` and then `removed` applied (a key in both ends
 * removed): each page that moved is rebuilt, and split into pages of at most
 * PAGE_KEYS keys when it grew past them; the other pages are shared. Null when
 * nothing moved. Pages are never removed: an empty one stays.
 */
export function moveBucket(
  bucket: MemberBucket,
  added: Iterable<string>,
  removed: Iterable<string>,
): BucketMove | null {
  const touched = new Map<number, { added: string[]; removed: string[] }>();
  const of = (key: string) => {
    const i = pageIndex(bucket, key);
    let keys = touched.get(i);
    if (!keys) touched.set(i, (keys = { added: [], removed: [] }));
    return keys;
  };
  for (const key of added) of(key).added.push(key);
  for (const key of removed) of(key).removed.push(key);
  const pages = [...bucket.pages];
  const written: string[] = [];
  // From the last page down, so that a split's new pages leave the indexes still to visit in place.
  for (const i of [...touched.keys()].sort((a, b) => b - a)) {
    const page = pages[i];
    const keys = touched.get(i)!;
    const after = new Set(page.members);
    for (const key of keys.added) after.add(key);
    for (const key of keys.removed) after.delete(key);
    if (after.size === page.members.length && page.members.every((key) => after.has(key))) continue;
    const split = splitPage(page.low, sortKeys([...after]));
    pages.splice(i, 1, ...split);
    written.push(...split.map((piece) => piece.low));
  }
  return written.length === 0 ? null : { bucket: { pages }, written };
}

/**
 * Sorted keys from `low` as pages of at most PAGE_KEYS: one page when they
 * fit, else equal pieces of at most half of PAGE_KEYS, so the next keys added
 * to any of them do not split it again at once.
 */
export function splitPage(low: string, members: readonly string[]): MemberPage[] {
  if (members.length <= PAGE_KEYS) return [{ low, members }];
  const pieces = Math.ceil(members.length / (PAGE_KEYS / 2));
  const size = Math.ceil(members.length / pieces);
  return Array.from({ length: pieces }, (_, n) => {
    const slice = members.slice(n * size, (n + 1) * size);
    return { low: n === 0 ? low : slice[0], members: slice };
  });
}

/**
 * Page `_id`s (`<bucket>/<low>`) in the order to write them: of each bucket,
 * the highest `low` first, so a split's new pages are stored before the page
 * they came from gives their keys up (assembleBucket reads any stop between as
 * it was before).
 */
export const writeOrder = (pageIds: Iterable<string>): string[] => [...pageIds].sort((a, b) => compareKeys(b, a));

/** The index of the page holding `key`: the last whose `low` is at or before it. */
function pageIndex({ pages }: MemberBucket, key: string): number {
  let [from, to] = [0, pages.length - 1];
  while (from < to) {
    const mid = (from + to + 1) >> 1;
    if (compareKeys(pages[mid].low, key) <= 0) from = mid;
    else to = mid - 1;
  }
  return from;
}

/** The index of the first of sorted `keys` at or after `bound`. */
function firstFrom(keys: readonly string[], bound: string): number {
  let [from, to] = [0, keys.length];
  while (from < to) {
    const mid = (from + to) >> 1;
    if (compareKeys(keys[mid], bound) < 0) from = mid + 1;
    else to = mid;
  }
  return from;
}
