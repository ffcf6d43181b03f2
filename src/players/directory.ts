import type { PlayerCohorts, PlayerDirectory } from "../events/player-directory.js";
import type { CohortFilter } from "../events/reads/query.js";
import { deviceKey, partnerKey } from "./rules/identity-key.js";
import { profileQueryOf } from "./rules/profile-match.js";
import type { Search } from "./search.js";
import type { PlayerStores } from "./storage/stores.js";

/** How a device-only player's identity key begins (identity-key.ts). */
const DEVICE_PREFIX = deviceKey("");

/** Tags a project can have; the top-tags listing reads them all. */
const MAX_PROJECT_TAGS = 500;

/**
 * The players as the events side reads them (its PlayerDirectory), straight from the players' stores: profiles and
 * device links by `_id`, a cohort's members from CohortSearch, the top tags from the tag listing.
 */
export class StoredPlayerDirectory implements PlayerDirectory {
  constructor(
    private readonly stores: PlayerStores,
    private readonly search: Search,
  ) {}

  /**
   * The live profiles' tags and traits (folded ones are left out). The owner fills its memory of the project first:
   * the apply worker asks for every player an event names, most of them with no profile at all.
   */
  async cohortsOf(projectId: string, identityKeys: readonly string[]): Promise<Map<string, PlayerCohorts>> {
    const slots = await this.stores.profiles.readSlots(projectId, identityKeys, { fillMemory: true });
    return new Map(
      [...slots].flatMap(([key, { profile }]) =>
        profile ? [[key, { tags: profile.tags, traits: profile.traits }]] : [],
      ),
    );
  }

  async foldTargets(projectId: string, identityKeys: readonly string[]): Promise<Map<string, string>> {
    const slots = await this.stores.profiles.readSlots(projectId, identityKeys);
    const targets = new Map([...slots].flatMap(([key, slot]) => (slot.foldedInto ? [[key, slot.foldedInto]] : [])));
    const devices = identityKeys.filter((key) => !targets.has(key) && key.startsWith(DEVICE_PREFIX));
    const owners = await this.deviceOwners(
      projectId,
      devices.map((key) => key.slice(DEVICE_PREFIX.length)),
    );
    for (const [device, owner] of owners) targets.set(deviceKey(device), owner);
    return targets;
  }

  async deviceOwners(projectId: string, deviceIds: readonly string[]): Promise<Map<string, string>> {
    const links = await this.stores.devices.findMany(projectId, deviceIds);
    return new Map([...links].flatMap(([device, link]) => (link ? [[device, partnerKey(link.partnerUserId)]] : [])));
  }

  members(projectId: string, filter: CohortFilter): Promise<readonly (readonly string[])[]> {
    return this.stores.cohorts.memberKeys(projectId, profileQueryOf(filter));
  }

  async hasTraitKey(projectId: string, key: string): Promise<boolean> {
    return (await this.stores.traitKeys.findRegistered(projectId, [key])).has(key);
  }

  async topTags(projectId: string, limit: number): Promise<string[]> {
    const { tags } = await this.search.listTags(projectId, {}, 1, MAX_PROJECT_TAGS);
    return tags
      .filter((tag) => tag.playersCount > 0)
      .sort((a, b) => b.playersCount - a.playersCount || a.id - b.id)
      .slice(0, limit)
      .map((tag) => tag.tag);
  }
}
