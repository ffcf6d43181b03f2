import { Bitmap } from "../sets/bitmap.js";
import type { CohortFilter } from "../events/reads/query.js";
import { PROFILES, tagSet, type CohortSets } from "./cohorts/cohort-sets.js";
import type { IdentityOrder } from "./cohorts/identity-order.js";
import type { SeenTimes, TagSeen } from "./cohorts/tag-seen.js";
import { profileMatcher, type ProfileQuery } from "./rules/profile-match.js";
import type { ProfileRecord } from "./rules/profile.js";
import type { RegisteredTag } from "./rules/tag-record.js";
import type { PlayerStores } from "./storage/stores.js";

/** A tag as listed: its registry record with its players_count. */
export interface TagRecord extends RegisteredTag {
  playersCount: number;
}

export interface CohortPage {
  profiles: ProfileRecord[];
  total: number;
}

/** Profiles an export reads at a time. */
export const EXPORT_BATCH = 1_000;

/** A search's filter as the sets read it. */
export const filterOf = (query: ProfileQuery): CohortFilter => ({
  tags: query.tagsAll ?? query.tagsAny ?? [],
  tagsMatch: query.tagsAll ? "all" : "any",
  traits: query.traits ?? [],
  tagsNone: query.tagsNone ?? [],
  ...(query.experiment && { experiment: query.experiment }),
});

export interface SearchOptions {
  stores: PlayerStores;
  cohorts: CohortSets;
  order: IdentityOrder;
  seen: TagSeen;
}

/**
 * Reads of cohorts, as set arithmetic: a search's total is its set's size and its page the set's players in identity
 * key order; an export streams them all; a tag's players_count is its set's size.
 */
export class Search {
  constructor(private readonly options: SearchOptions) {}

  /** The players with a profile in the cohort of `query`. */
  async members(projectId: string, query: ProfileQuery): Promise<Bitmap> {
    const { cohorts } = this.options;
    const [profiles] = await cohorts.members(projectId, [PROFILES]);
    const cohort = await cohorts.resolve(projectId, filterOf(query));
    return "members" in cohort ? Bitmap.and(cohort.members, profiles) : Bitmap.andNot(profiles, cohort.allBut);
  }

  /** One page of the players matching `query`, by identity_key ascending, and how many match. */
  async search(projectId: string, query: ProfileQuery, page: number, pageSize: number): Promise<CohortPage> {
    const members = await this.members(projectId, query);
    const entries = await this.options.order.page(projectId, members, (page - 1) * pageSize, pageSize);
    return { profiles: await this.profiles(projectId, entries, query), total: members.size };
  }

  /** Every profile of a cohort in identity key order, read a batch at a time as the caller consumes them. */
  async *export(projectId: string, query: ProfileQuery): AsyncGenerator<ProfileRecord> {
    const members = await this.members(projectId, query);
    for await (const entries of this.options.order.all(projectId, members, EXPORT_BATCH)) {
      yield* await this.profiles(projectId, entries, query);
    }
  }

  /**
   * The project's tags from their one-document list (at most 500) with their counts, filtered and paged in memory.
   * A list of another length than the project's tag counter lags a registration (in flight, or cut by a crash until
   * the start-up repair): then the records are read instead, by a scan of player_tags on FerretDB.
   */
  async listTags(
    projectId: string,
    query: { textPattern?: string; category?: string | null },
    page: number,
    pageSize: number,
  ) {
    const { stores } = this.options;
    const [listed, registered] = await Promise.all([stores.tags.listed(projectId), stores.counters.read(projectId)]);
    const all = (listed ?? []).length === registered.tags ? (listed ?? []) : await stores.tags.listAll(projectId);
    const text = query.textPattern === undefined ? undefined : new RegExp(query.textPattern, "i");
    const matching = all.filter(
      (tag) =>
        (query.category === undefined || tag.category === query.category) &&
        (text === undefined || text.test(tag.tag) || text.test(tag.label)),
    );
    const categories = [...new Set(all.flatMap((tag) => (tag.category === null ? [] : [tag.category])))].sort();
    const skip = (page - 1) * pageSize;
    const tags = await this.withStats(projectId, matching.slice(skip, skip + pageSize));
    return { tags, total: matching.length, categories };
  }

  /** Registry records with players_count (the size of each tag's set) and the last time a player was given it. */
  async withStats(projectId: string, tags: readonly RegisteredTag[]): Promise<TagRecord[]> {
    const [sets, seen] = await Promise.all([
      this.options.cohorts.members(
        projectId,
        tags.map((tag) => tagSet(tag.tag)),
      ),
      this.options.seen.read(projectId),
    ]);
    return tags.map((tag, i) => withStats(tag, sets[i].size, seen));
  }

  /** The profiles of `entries`, those still matching `query` (a profile written since the set was read may not). */
  private async profiles(projectId: string, entries: readonly [string, number][], query: ProfileQuery) {
    const slots = await this.options.stores.profiles.readSlots(
      projectId,
      entries.map(([key]) => key),
    );
    const matches = profileMatcher(query);
    return entries.flatMap(([key]) => {
      const profile = slots.get(key)?.profile;
      return profile && matches(profile) ? [profile] : [];
    });
  }
}

function withStats(tag: RegisteredTag, playersCount: number, seen: SeenTimes): TagRecord {
  const given = seen.get(tag.id);
  return { ...tag, lastSeenAt: given && given > tag.lastSeenAt ? given : tag.lastSeenAt, playersCount };
}
