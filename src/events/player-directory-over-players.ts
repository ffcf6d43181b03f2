import { deviceKey, partnerKey } from "../players/rules/identity-key.js";
import type { ProfileQuery } from "../players/rules/profile-match.js";
import type { Players } from "../players/players.js";
import type { PlayerCohorts, PlayerDirectory } from "./player-directory.js";
import type { CohortFilter } from "./reads/query.js";

/** How a device-only player's identity key begins (identity-key.ts). */
const DEVICE_PREFIX = deviceKey("");

/** Tags a project can have; the top-tags listing reads them all. */
const MAX_PROJECT_TAGS = 500;

/**
 * The PlayerDirectory over the players capability: profiles and device links
 * by `_id`; a cohort's members from the tag membership search reads (traits
 * checked on the candidates' profiles).
 */
export class PlayerDirectoryOverPlayers implements PlayerDirectory {
  constructor(private readonly players: Players) {}

  async cohortsOf(projectId: string, identityKeys: readonly string[]): Promise<Map<string, PlayerCohorts>> {
    const profiles = await this.players.profilesOf(projectId, identityKeys);
    return new Map([...profiles].map(([key, profile]) => [key, { tags: profile.tags, traits: profile.traits }]));
  }

  async foldTargets(projectId: string, identityKeys: readonly string[]): Promise<Map<string, string>> {
    const targets = await this.players.foldTargets(projectId, identityKeys);
    const devices = identityKeys.filter((key) => !targets.has(key) && key.startsWith(DEVICE_PREFIX));
    const owners = await this.deviceOwners(
      projectId,
      devices.map((key) => key.slice(DEVICE_PREFIX.length)),
    );
    for (const [device, owner] of owners) targets.set(deviceKey(device), owner);
    return targets;
  }

  async deviceOwners(projectId: string, deviceIds: readonly string[]): Promise<Map<string, string>> {
    const owners = await this.players.deviceOwners(projectId, deviceIds);
    return new Map([...owners].map(([device, partner]) => [device, partnerKey(partner)]));
  }

  members(projectId: string, filter: CohortFilter): Promise<readonly (readonly string[])[]> {
    const query: ProfileQuery = {};
    if (filter.tags.length > 0) query[filter.tagsMatch === "all" ? "tagsAll" : "tagsAny"] = filter.tags;
    if (filter.traits.length > 0) query.traits = filter.traits;
    if (filter.tagsNone.length > 0) query.tagsNone = filter.tagsNone;
    return this.players.members(projectId, query);
  }

  hasTraitKey(projectId: string, key: string): Promise<boolean> {
    return this.players.hasTraitKey(projectId, key);
  }

  async topTags(projectId: string, limit: number): Promise<string[]> {
    const { tags } = await this.players.listTags(projectId, {}, 1, MAX_PROJECT_TAGS);
    return tags
      .filter((tag) => tag.playersCount > 0)
      .sort((a, b) => b.playersCount - a.playersCount || a.id - b.id)
      .slice(0, limit)
      .map((tag) => tag.tag);
  }
}
