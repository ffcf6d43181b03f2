import { mergeKeys, sortKeys } from "./rules/key-order.js";
import type { TraitValue } from "./rules/normalise.js";
import type { ProfileQuery } from "./storage/profile-store.js";
import type { ProfileRecord } from "./rules/profile.js";
import type { PlayerStores } from "./storage/stores.js";
import type { TagStats } from "./membership/membership-memory.js";
import type { RegisteredTag } from "./rules/tag-record.js";

/** A tag as listed: its registry record with its players_count. */
export interface TagRecord extends RegisteredTag {
  playersCount: number;
}

/**
 * Above this many candidates from membership, a search that also filters on
 * traits lets the engine scan the project's profiles instead of reading each
 * candidate by `_id`; docs/database.md states both costs.
 */
export const MAX_CANDIDATES_READ = 2_000;

/** Reads of cohorts: search from tag membership, tag listing from the registry and its counts. */
export class Search {
  constructor(private readonly stores: PlayerStores) {}

  /**
   * One page of the players matching `query`, by identity_key ascending, and
   * how many match. Tags are answered from membership (union for any,
   * intersection for all; the owner keeps it in memory) and their traits
   * checked on the owner's memory of profiles, then the tags' sorted buckets
   * are merged up to the page. Traits without tags, or `tags_none` alone,
   * filter the profiles in memory; without memory, candidates are read, or the
   * engine scans. Where indexes answer queries (MongoDB) the profiles' tag and
   * trait indexes answer it all: no membership documents there.
   */
  async search(projectId: string, query: ProfileQuery, page: number, pageSize: number) {
    const skip = (page - 1) * pageSize;
    if (!this.stores.membership.materialised) return this.stores.profiles.matching(projectId, query, skip, pageSize);
    const buckets = await this.tagMembersByBucket(projectId, query);
    const matching = buckets && (query.traits ? await this.withTraits(projectId, buckets, query.traits) : buckets);
    if (matching) {
      const profiles = await this.read(projectId, mergeKeys(matching, skip + pageSize).slice(skip));
      return { profiles, total: matching.reduce((total, members) => total + members.length, 0) };
    }
    const remembered = await this.fromMemory(projectId, query);
    if (remembered) {
      const byKey = new Map(remembered.map((profile) => [profile.identityKey, profile]));
      const page = sortKeys([...byKey.keys()]).slice(skip, skip + pageSize);
      return { profiles: page.map((key) => byKey.get(key)!), total: remembered.length };
    }
    const members = buckets && mergeKeys(buckets);
    if (!members || (query.traits && members.length > MAX_CANDIDATES_READ)) {
      return this.stores.profiles.matching(projectId, query, skip, pageSize);
    }
    const wanted = traitPairs(query.traits ?? []);
    const found = (await this.read(projectId, members)).filter((profile) => hasTraits(profile, wanted));
    return { profiles: found.slice(skip, skip + pageSize), total: found.length };
  }

  /** Per bucket, the members holding `traits` (the owner's memory keeps their holders); null where it does not hold the project. */
  private async withTraits(projectId: string, buckets: readonly (readonly string[])[], traits: readonly string[]) {
    const holders = await this.stores.profiles.traitHolders(projectId, traitPairs(traits));
    if (!holders) return null;
    return buckets.map((keys) => keys.filter((key) => holders.every((holding) => holding.has(key))));
  }

  /**
   * Every player matching `query`, by identity key (all of them, unpaged, in no order: the charts sum them), as
   * disjoint lists (shared: read only): tags from membership (the owner's memory keeps it: a tag alone answers its
   * kept buckets as they are) with traits checked against their holders; without tags, or where the holders are not
   * kept, a filter over the owner's memory of profiles; else traits checked on each candidate's profile, or with
   * many candidates or no tag, the engine's scan.
   */
  async memberKeys(projectId: string, query: ProfileQuery): Promise<(readonly string[])[]> {
    if (!this.stores.membership.materialised) return [await this.stores.profiles.matchingKeys(projectId, query)];
    const buckets = await this.tagMembersByBucket(projectId, query);
    const matching = buckets && (query.traits ? await this.withTraits(projectId, buckets, query.traits) : buckets);
    if (matching) return matching;
    const remembered = await this.fromMemory(projectId, query);
    if (remembered) return [remembered.map((profile) => profile.identityKey)];
    // Tags and traits whose holders are not kept: the candidates' profiles, or with many, the engine's scan.
    const members = buckets?.flat();
    if (!members || !query.traits || members.length > MAX_CANDIDATES_READ) {
      return [await this.stores.profiles.matchingKeys(projectId, query)];
    }
    const wanted = traitPairs(query.traits);
    const profiles = await this.read(projectId, members);
    return [profiles.filter((profile) => hasTraits(profile, wanted)).map((profile) => profile.identityKey)];
  }

  /**
   * Every live profile matching `query`, in no order, from the owner's memory
   * (no database command once the project is in it); null where there is none
   * (MongoDB) or the project does not fit it.
   */
  private async fromMemory(projectId: string, query: ProfileQuery): Promise<ProfileRecord[] | null> {
    const live = await this.stores.profiles.liveProfiles(projectId);
    return live && live.filter(profileMatcher(query));
  }

  /**
   * The identity keys carrying any (or all) of the query's tags and none of its `tagsNone`, per membership bucket:
   * disjoint lists, each sorted; null when the query names no tag to carry (only a scan answers it).
   */
  private async tagMembersByBucket(projectId: string, query: ProfileQuery): Promise<(readonly string[])[] | null> {
    const tags = query.tagsAll ?? query.tagsAny;
    if (!tags) return null;
    const [members, excluded] = await Promise.all([
      this.members(projectId, tags, query.tagsAll !== undefined),
      query.tagsNone ? this.members(projectId, query.tagsNone, false) : [],
    ]);
    return members.map((keys, bucket) => {
      const out = new Set(excluded[bucket]);
      return out.size === 0 ? keys : keys.filter((key) => !out.has(key));
    });
  }

  /**
   * Identity keys carrying any (or all) of `tags`, per bucket, each sorted.
   * Buckets of equal number hold the same keys' memberships, so no key is in two.
   */
  private async members(projectId: string, tags: readonly string[], all: boolean): Promise<(readonly string[])[]> {
    const perTag = await this.stores.membership.read(projectId, tags);
    return perTag[0].map((_, bucket) => {
      const sets = perTag.map((buckets) => buckets[bucket]);
      if (sets.length === 1) return sets[0];
      if (!all) return sortKeys([...new Set(sets.flat())]);
      const others = sets.slice(1).map((members) => new Set(members));
      return sets[0].filter((key) => others.every((set) => set.has(key)));
    });
  }

  /**
   * The profiles of `keys` in that order, from the owner's memory (filled at
   * the project's first read) or by `_id`; a key whose profile is gone is left out.
   */
  private async read(projectId: string, keys: readonly string[]): Promise<ProfileRecord[]> {
    const slots = await this.stores.profiles.readSlots(projectId, keys, { fillMemory: true });
    return keys.flatMap((key) => {
      const profile = slots.get(key)?.profile;
      return profile ? [profile] : [];
    });
  }

  /**
   * The project's tags from their one-document list (at most 500) with their
   * counts, filtered and paged in memory: three point reads, never profiles.
   * A list of another length than the project's tag counter lags a
   * registration (in flight, or cut by a crash until the start-up repair):
   * then the records are read instead, by a scan of player_tags on FerretDB.
   */
  async listTags(
    projectId: string,
    query: { textPattern?: string; category?: string | null },
    page: number,
    pageSize: number,
  ) {
    const [listed, registered, stats] = await Promise.all([
      this.stores.tags.listed(projectId),
      this.stores.counters.read(projectId),
      this.stores.membership.readStats(projectId),
    ]);
    const all = (listed ?? []).length === registered.tags ? (listed ?? []) : await this.stores.tags.listAll(projectId);
    const text = query.textPattern === undefined ? undefined : new RegExp(query.textPattern, "i");
    const matching = all.filter(
      (tag) =>
        (query.category === undefined || tag.category === query.category) &&
        (text === undefined || text.test(tag.tag) || text.test(tag.label)),
    );
    const categories = [...new Set(all.flatMap((tag) => (tag.category === null ? [] : [tag.category])))].sort();
    const skip = (page - 1) * pageSize;
    const tags = withStats(matching.slice(skip, skip + pageSize), stats);
    return { tags, total: matching.length, categories };
  }

  /** Registry records with players_count and the last time a player was given the tag. */
  async withStats(projectId: string, tags: readonly RegisteredTag[]): Promise<TagRecord[]> {
    return withStats(tags, await this.stores.membership.readStats(projectId));
  }
}

function withStats(tags: readonly RegisteredTag[], { counts, seen }: TagStats): TagRecord[] {
  return tags.map((tag) => {
    const given = seen.get(tag.id);
    const lastSeenAt = given && given > tag.lastSeenAt ? given : tag.lastSeenAt;
    return { ...tag, lastSeenAt, playersCount: counts.get(tag.id) ?? 0 };
  });
}

/** Whether a profile is in the cohort of `query`: its tags and traits checked in memory. */
export function profileMatcher(query: ProfileQuery): (profile: ProfileRecord) => boolean {
  const wanted = traitPairs(query.traits ?? []);
  return (profile) => hasTags(profile, query) && hasTraits(profile, wanted);
}

/** A player carries at most 50 tags: `includes` beats building a set per profile. */
function hasTags({ tags }: ProfileRecord, { tagsAny, tagsAll, tagsNone }: ProfileQuery): boolean {
  // Plain loops: a search or chart without tags tests every profile of the project, once per cohort.
  if (tagsAny) {
    let any = false;
    for (let i = 0; i < tagsAny.length && !any; i++) any = tags.includes(tagsAny[i]);
    if (!any) return false;
  }
  for (let i = 0; tagsAll && i < tagsAll.length; i++) if (!tags.includes(tagsAll[i])) return false;
  for (let i = 0; tagsNone && i < tagsNone.length; i++) if (tags.includes(tagsNone[i])) return false;
  return true;
}

/** The query's traits (traitIndexEntry() of each) as key and value, compared with a profile's without encoding them. */
const traitPairs = (traits: readonly string[]) => traits.map((entry) => JSON.parse(entry) as [string, TraitValue]);

function hasTraits(profile: ProfileRecord, wanted: readonly [string, TraitValue][]): boolean {
  return wanted.every(([key, value]) => profile.traits.get(key) === value);
}
