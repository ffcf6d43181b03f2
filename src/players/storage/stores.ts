import type { Db } from "mongodb";
import { AccountLinkStore, DeviceLinkStore } from "./link-stores.js";
import { MembershipStore } from "../membership/membership-store.js";
import { BucketSearch, ProfileIndexSearch, type CohortSearch } from "../membership/cohort-search.js";
import { PlatformUserStore } from "./platform-user-store.js";
import { ChangedPlayers } from "../changed-players.js";
import type { Engine } from "../../db/engine.js";
import type { Logger } from "../../log.js";
import { ProfileStore } from "./profile-store.js";
import { RegistryCounterStore } from "../membership/registry-counter-store.js";
import { TagStore } from "./tag-store.js";
import { TraitKeyStore } from "./trait-key-store.js";
import { UpdateRequestStore } from "./update-request-store.js";

/** The store of each players collection. */
export interface PlayerStores {
  profiles: ProfileStore;
  tags: TagStore;
  membership: MembershipStore;
  /** Who is in a cohort: the profiles' indexes where indexes answer queries, else membership's buckets. */
  cohorts: CohortSearch;
  changes: ChangedPlayers;
  traitKeys: TraitKeyStore;
  counters: RegistryCounterStore;
  devices: DeviceLinkStore;
  accounts: AccountLinkStore;
  platformUsers: PlatformUserStore;
  updateRequests: UpdateRequestStore;
}

/** `engine`: how the stores read and guard their writes, and the owner's memory where profiles are kept. */
export function createPlayerStores(db: Db, engine: Engine, log?: Logger): PlayerStores {
  const profiles = new ProfileStore(db, engine);
  const membership = new MembershipStore(db, engine, log);
  return {
    profiles,
    tags: new TagStore(db, engine),
    membership,
    cohorts: engine.queryIndexes ? new ProfileIndexSearch(profiles) : new BucketSearch(profiles, membership),
    changes: new ChangedPlayers(db, engine),
    traitKeys: new TraitKeyStore(db, engine),
    counters: new RegistryCounterStore(db),
    devices: new DeviceLinkStore(db, engine),
    accounts: new AccountLinkStore(db, engine),
    platformUsers: new PlatformUserStore(db),
    updateRequests: new UpdateRequestStore(db, engine),
  };
}

/** Every query is led by project_id, so each index starts with it. */
export async function createPlayerIndexes(stores: PlayerStores): Promise<void> {
  await stores.profiles.createIndexes();
  await stores.tags.createIndexes();
  await stores.traitKeys.createIndexes();
  await stores.updateRequests.createIndexes();
}
