import { partnerKey } from "../players/identity-key.js";
import type { PlayerStore, ProfileQuery } from "../players/store.js";
import { pointReads } from "./point-reads.js";
import type { PlayerCohorts, PlayerDirectory } from "./player-directory.js";
import type { CohortFilter } from "./query.js";

/** Tags a project can have; the top-tags listing reads them all. */
const MAX_PROJECT_TAGS = 500;

/**
 * The PlayerDirectory over the players' stores: profiles and device links
 * by `_id`; members of a cohort through the profile query players/search uses.
 */
export class StoreDirectory implements PlayerDirectory {
  constructor(private readonly store: PlayerStore) {}

  async cohortsOf(projectId: string, identityKeys: readonly string[]): Promise<Map<string, PlayerCohorts>> {
    const profiles = await pointReads(identityKeys, (key) => this.store.findProfile(projectId, key));
    const found = new Map<string, PlayerCohorts>();
    for (const profile of profiles) {
      if (profile) found.set(profile.identityKey, { tags: profile.tags, traits: profile.traits });
    }
    return found;
  }

  async deviceOwners(projectId: string, deviceIds: readonly string[]): Promise<Map<string, string>> {
    // One device a read: a read of many by `$in` scans on FerretDB.
    const owners = await pointReads(deviceIds, (id) => this.store.findDeviceOwners(projectId, [id]));
    const found = new Map<string, string>();
    for (const owner of owners) for (const [device, partner] of owner) found.set(device, partnerKey(partner));
    return found;
  }

  async members(projectId: string, filter: CohortFilter): Promise<string[]> {
    const query: ProfileQuery = {};
    if (filter.tags.length > 0) query[filter.tagsMatch === "all" ? "tagsAll" : "tagsAny"] = filter.tags;
    if (filter.traits.length > 0) query.traits = filter.traits;
    const { profiles } = await this.store.searchProfiles(projectId, query, 0, Number.MAX_SAFE_INTEGER);
    return profiles.map((profile) => profile.identityKey);
  }

  async hasTraitKey(projectId: string, key: string): Promise<boolean> {
    return (await this.store.findRegisteredTraitKeys(projectId, [key])).has(key);
  }

  async topTags(projectId: string, limit: number): Promise<string[]> {
    const { tags } = await this.store.listTags(projectId, {}, 0, MAX_PROJECT_TAGS);
    return tags
      .filter((tag) => tag.playersCount > 0)
      .sort((a, b) => b.playersCount - a.playersCount || a.id - b.id)
      .slice(0, limit)
      .map((tag) => tag.tag);
  }
}
