import type { ProfileQuery } from "./rules/profile-match.js";
import type { CohortPage } from "./membership/cohort-search.js";
import type { PlayerStores } from "./storage/stores.js";
import type { TagStats } from "./membership/membership-memory.js";
import type { RegisteredTag } from "./rules/tag-record.js";

/** A tag as listed: its registry record with its players_count. */
export interface TagRecord extends RegisteredTag {
  playersCount: number;
}

/** Reads of cohorts: search (the engine's CohortSearch, chosen at start), tag listing from the registry and its counts. */
export class Search {
  constructor(private readonly stores: PlayerStores) {}

  /** One page of the players matching `query`, by identity_key ascending, and how many match (CohortSearch). */
  search(projectId: string, query: ProfileQuery, page: number, pageSize: number): Promise<CohortPage> {
    return this.stores.cohorts.page(projectId, query, (page - 1) * pageSize, pageSize);
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
