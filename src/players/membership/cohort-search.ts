import { mergeKeys, sortKeys } from "../rules/identity-key.js";
import { hasTraits, profileMatcher, traitPairs, type ProfileQuery } from "../rules/profile-match.js";
import type { ProfileRecord } from "../rules/profile.js";
import type { ProfileStore } from "../storage/profile-store.js";
import type { MembershipStore } from "./membership-store.js";

/**
 * Above this many candidates from membership, a search that also filters on
 * traits lets the engine scan the project's profiles instead of reading each
 * candidate by `_id`; docs/database.md states both costs.
 */
export const MAX_CANDIDATES_READ = 2_000;

/** A page of a cohort's players and how many there are. */
export interface CohortPage {
  profiles: ProfileRecord[];
  total: number;
}

/**
 * Who is in a cohort, as each engine answers it best, chosen once at start (createPlayerStores): the profiles' own
 * indexes where indexes answer queries (MongoDB), else tag membership's buckets (FerretDB).
 */
export interface CohortSearch {
  /** One page (`skip`, `pageSize`) of the players matching `query`, by identity_key ascending, and how many match. */
  page(projectId: string, query: ProfileQuery, skip: number, pageSize: number): Promise<CohortPage>;
  /**
   * Every player matching `query`, by identity key (all of them, unpaged, in no order: the charts sum them), as
   * disjoint lists (shared: read only).
   */
  memberKeys(projectId: string, query: ProfileQuery): Promise<(readonly string[])[]>;
}

/** Where indexes answer queries (MongoDB): the profiles' multikey tag index and trait index answer it all. */
export class ProfileIndexSearch implements CohortSearch {
  constructor(private readonly profiles: ProfileStore) {}

  page(projectId: string, query: ProfileQuery, skip: number, pageSize: number): Promise<CohortPage> {
    return this.profiles.matching(projectId, query, skip, pageSize);
  }

  async memberKeys(projectId: string, query: ProfileQuery): Promise<(readonly string[])[]> {
    return [await this.profiles.matchingKeys(projectId, query)];
  }
}

/** Where only `_id` is indexed (FerretDB): tag membership's buckets, and the owner's memory of profiles. */
export class BucketSearch implements CohortSearch {
  constructor(
    private readonly profiles: ProfileStore,
    private readonly membership: MembershipStore,
  ) {}

  /**
   * One page of the players matching `query`, by identity_key ascending, and
   * how many match. Tags are answered from membership (union for any,
   * intersection for all; the owner keeps it in memory) and their traits
   * checked on the owner's memory of profiles, then the tags' sorted buckets
   * are merged up to the page. Traits without tags, or `tags_none` alone,
   * filter the profiles in memory; without memory, candidates are read, or the
   * engine scans.
   */
  async page(projectId: string, query: ProfileQuery, skip: number, pageSize: number): Promise<CohortPage> {
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
      return this.profiles.matching(projectId, query, skip, pageSize);
    }
    const wanted = traitPairs(query.traits ?? []);
    const found = (await this.read(projectId, members)).filter((profile) => hasTraits(profile, wanted));
    return { profiles: found.slice(skip, skip + pageSize), total: found.length };
  }

  /** Per bucket, the members holding `traits` (the owner's memory keeps their holders); null where it does not hold the project. */
  private async withTraits(projectId: string, buckets: readonly (readonly string[])[], traits: readonly string[]) {
    const holders = await this.profiles.traitHolders(projectId, traitPairs(traits));
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
    const buckets = await this.tagMembersByBucket(projectId, query);
    const matching = buckets && (query.traits ? await this.withTraits(projectId, buckets, query.traits) : buckets);
    if (matching) return matching;
    const remembered = await this.fromMemory(projectId, query);
    if (remembered) return [remembered.map((profile) => profile.identityKey)];
    // Tags and traits whose holders are not kept: the candidates' profiles, or with many, the engine's scan.
    const members = buckets?.flat();
    if (!members || !query.traits || members.length > MAX_CANDIDATES_READ) {
      return [await this.profiles.matchingKeys(projectId, query)];
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
    const live = await this.profiles.liveProfiles(projectId);
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
    const perTag = await this.membership.read(projectId, tags);
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
    const slots = await this.profiles.readSlots(projectId, keys, { fillMemory: true });
    return keys.flatMap((key) => {
      const profile = slots.get(key)?.profile;
      return profile ? [profile] : [];
    });
  }
}
