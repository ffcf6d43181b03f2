import type { Clock } from "../../clock.js";
import { ContentionError } from "../../errors.js";
import type { KeyedLock } from "../../db/keyed-lock.js";
import { decideErasure, erasedKeys } from "../rules/erasure.js";
import { deviceKey, partnerKey, partnerOf } from "../rules/identity-key.js";
import type { ProfileRecord, ProfileSlot } from "../rules/profile.js";
import type { PlayerStores } from "../storage/stores.js";
import { profileLock } from "./round-locks.js";
import type { RoundWriter } from "./round-writer.js";

/** Rounds of one erasure before it gives up: a round runs again when its player changed under it. */
const MAX_ROUNDS = 20;
/** Tombstones followed from a folded profile to the live one. */
const MAX_FOLD_HOPS = 8;

export interface ErasureDeps {
  stores: PlayerStores;
  locks: KeyedLock;
  clock: Clock;
  writer: RoundWriter;
  lockWaitLimitMs?: number;
}

/** An erasure's answer: whether the project knew the player, and the player's identity key. */
export interface ErasureOutcome {
  deleted: boolean;
  identityKey: string;
  /** Every identity key erased: the player's, and the profiles and devices that were theirs. */
  identityKeys: string[];
}

/**
 * Erases the player `identity` names (the player a linked device belongs to), in rounds of the write path, once the
 * project's failed rounds are completed (RoundWriter.completedFor): find the player and everything folded or linked
 * into them, take the locks of all their profiles, read them again and decide the erasure, write it
 * (RoundWriter.erase). A round whose player was folded or gained a profile meanwhile,
 * or whose write lost to another process, runs again.
 */
export async function erase(
  deps: ErasureDeps,
  projectId: string,
  identity: { partnerUserId: string } | { deviceId: string },
): Promise<ErasureOutcome> {
  const { stores, locks, clock, writer, lockWaitLimitMs } = deps;
  await writer.completedFor(projectId, lockWaitLimitMs);
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const { key: target, slot } = await liveTarget(stores, projectId, identity);
    const partner = partnerOf(target);
    const devices = partner === null ? [] : await stores.devices.devicesOf(projectId, partner);
    const keys = erasedKeys(target, slot, devices);
    const outcome = await locks.run(
      keys.map((key) => profileLock(projectId, key)),
      async () => {
        const slots = await stores.profiles.readSlots(projectId, keys);
        const now = slots.get(target)!;
        if (now.foldedInto !== null || erasedKeys(target, now, devices).some((key) => !keys.includes(key))) return null;
        const account = partner === null ? null : await stores.accounts.findPlatformUser(projectId, partner);
        const erasure = decideErasure(target, keys, slots, devices, account !== null);
        const { lost } = await writer.erase(projectId, erasure, clock.now());
        return lost.size > 0 ? null : { deleted: erasure.found, identityKey: target, identityKeys: keys };
      },
      { waitLimitMs: lockWaitLimitMs },
    );
    if (outcome) return outcome;
  }
  throw new ContentionError("too many concurrent writers to one player; retry");
}

/**
 * The player `identity` names now and every identity key whose data is theirs (erasedKeys): what players/data
 * answers, read without locks.
 */
export async function playerKeys(
  stores: PlayerStores,
  projectId: string,
  identity: { partnerUserId: string } | { deviceId: string },
): Promise<{ profile: ProfileRecord | null; identityKeys: string[] }> {
  const { key, slot } = await liveTarget(stores, projectId, identity);
  const partner = partnerOf(key);
  const devices = partner === null ? [] : await stores.devices.devicesOf(projectId, partner);
  return { profile: slot.profile, identityKeys: erasedKeys(key, slot, devices) };
}

/** The player `identity` names now: the device's player when it is linked, tombstones followed; with its slot. */
async function liveTarget(
  stores: PlayerStores,
  projectId: string,
  identity: { partnerUserId: string } | { deviceId: string },
): Promise<{ key: string; slot: ProfileSlot }> {
  let key: string;
  if ("partnerUserId" in identity) key = partnerKey(identity.partnerUserId);
  else {
    const link = await stores.devices.find(projectId, identity.deviceId);
    key = link ? partnerKey(link.partnerUserId) : deviceKey(identity.deviceId);
  }
  for (let hop = 0; ; hop++) {
    const slot = (await stores.profiles.readSlots(projectId, [key])).get(key)!;
    if (slot.foldedInto === null || hop === MAX_FOLD_HOPS) return { key, slot };
    key = slot.foldedInto;
  }
}
