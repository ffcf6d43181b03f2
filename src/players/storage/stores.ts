import type { Db } from "mongodb";
import type { Engine } from "../../db/engine.js";
import type { ChunkCache } from "../../sets/chunk-cache.js";
import { AccountLinkStore, DeviceLinkStore } from "./link-stores.js";
import { IntentStore } from "./intent-store.js";
import { PlatformUserStore } from "./platform-user-store.js";
import { ProfileStore } from "./profile-store.js";
import { RegistryCounterStore } from "./registry-counter-store.js";
import { TagStore } from "./tag-store.js";
import { TraitKeyStore } from "./trait-key-store.js";
import { UpdateRequestStore } from "./update-request-store.js";

/** The store of each players collection (the sets apart: cohorts/). */
export interface PlayerStores {
  profiles: ProfileStore;
  tags: TagStore;
  intents: IntentStore;
  traitKeys: TraitKeyStore;
  counters: RegistryCounterStore;
  devices: DeviceLinkStore;
  accounts: AccountLinkStore;
  platformUsers: PlatformUserStore;
  updateRequests: UpdateRequestStore;
}

/** `engine`: how the stores read and guard their writes; `cache`: what the sole writer keeps of the profiles. */
export function createPlayerStores(db: Db, engine: Engine, cache: ChunkCache): PlayerStores {
  return {
    profiles: new ProfileStore(db, engine, cache),
    tags: new TagStore(db, engine),
    intents: new IntentStore(db),
    traitKeys: new TraitKeyStore(db, engine),
    counters: new RegistryCounterStore(db),
    devices: new DeviceLinkStore(db, engine),
    accounts: new AccountLinkStore(db, engine),
    platformUsers: new PlatformUserStore(db),
    updateRequests: new UpdateRequestStore(db, engine),
  };
}

/** Every query is led by project_id, so each index starts with it. */
export async function createPlayerIndexes(stores: PlayerStores, engine: Engine): Promise<void> {
  await stores.tags.createIndexes();
  await stores.traitKeys.createIndexes();
  await stores.updateRequests.createIndexes(engine.queryIndexes);
  await stores.intents.createIndexes(engine.queryIndexes);
  await stores.devices.createIndexes(engine.queryIndexes);
}
