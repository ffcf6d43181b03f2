import type { Db } from "mongodb";
import { AccountLinkStore } from "./account-link-store.js";
import { DeviceLinkStore } from "./device-link-store.js";
import { MembershipJournalStore } from "./membership-journal-store.js";
import { MembershipStore } from "./membership-store.js";
import { PlatformUserStore } from "./platform-user-store.js";
import { engineOf } from "../db/engine.js";
import { ProfileStore } from "./profile-store.js";
import { RegistryCounterStore } from "./registry-counter-store.js";
import { TagStatsStore } from "./tag-stats-store.js";
import { TagStore } from "./tag-store.js";
import { TraitKeyStore } from "./trait-key-store.js";
import { UpdateRequestStore } from "./update-request-store.js";

/** The store of each players collection. */
export interface PlayerStores {
  profiles: ProfileStore;
  tags: TagStore;
  tagStats: TagStatsStore;
  membership: MembershipStore;
  journal: MembershipJournalStore;
  traitKeys: TraitKeyStore;
  counters: RegistryCounterStore;
  devices: DeviceLinkStore;
  accounts: AccountLinkStore;
  platformUsers: PlatformUserStore;
  updateRequests: UpdateRequestStore;
}

/** `engine`: how many profiles are read, and the owner's memory where profiles are kept (none by default). */
export function createPlayerStores(db: Db, isFerretDb: boolean, engine = engineOf({ isFerretDb }, 0)): PlayerStores {
  return {
    profiles: new ProfileStore(db, isFerretDb, engine),
    tags: new TagStore(db, isFerretDb),
    tagStats: new TagStatsStore(db),
    membership: new MembershipStore(db, isFerretDb),
    journal: new MembershipJournalStore(db),
    traitKeys: new TraitKeyStore(db),
    counters: new RegistryCounterStore(db),
    devices: new DeviceLinkStore(db),
    accounts: new AccountLinkStore(db, engine.ownerMemory),
    platformUsers: new PlatformUserStore(db),
    updateRequests: new UpdateRequestStore(db, isFerretDb),
  };
}

/** Every query is led by project_id, so each index starts with it. */
export async function createPlayerIndexes(stores: PlayerStores): Promise<void> {
  await stores.profiles.createIndexes();
  await stores.tags.createIndexes();
  await stores.traitKeys.createIndexes();
  await stores.updateRequests.createIndexes();
}
