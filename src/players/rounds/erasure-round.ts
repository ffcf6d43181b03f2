import type { Clock } from "../../clock.js";
import type { KeyedLock } from "../../db/keyed-lock.js";
import { ContentionError } from "../../errors.js";
import type { Step } from "../../steps.js";
import { decideErasure, erasedKeys, type Erasure } from "../rules/erasure.js";
import { deviceKey, partnerKey, partnerOf } from "../rules/identity-key.js";
import type { ProfileSlot } from "../rules/profile.js";
import type { PlayerStores } from "../storage/stores.js";
import { profileLock } from "./round-locks.js";
import type { RoundWriter } from "./round-writer.js";
import type { UpdateReplays } from "./update-replays.js";

/** Rounds of one erasure before it gives up: a round runs again when its player changed under it. */
const MAX_ROUNDS = 20;
/** Tombstones followed from a folded profile to the live one. */
const MAX_FOLD_HOPS = 8;

export interface ErasureDeps {
  stores: PlayerStores;
  locks: KeyedLock;
  clock: Clock;
  /** The write path's writer: its intents, guarded profile writes and background completions. */
  writer: RoundWriter;
  /** The answers kept for players/update retries. */
  replays: Pick<UpdateReplays, "forget">;
  lockWaitLimitMs?: number;
}

/** An erasure's answer: whether the project knew the player, and the player's identity key. */
export interface ErasureOutcome {
  deleted: boolean;
  identityKey: string;
}

type Identity = { partnerUserId: string } | { deviceId: string };

/**
 * players/delete: erases the player `identity` names (the player a linked device belongs to) everywhere, and takes
 * them out of every count, each step timed by `step` (`platform_step_seconds{path="delete"}`):
 *
 * 1. `settle`: the project's failed rounds are completed first, so a retry of an erasure that failed after its commit
 *    point answers once that erasure is done (RoundWriter.completedFor);
 * then in rounds, until the player holds still while it is erased:
 * 2. `find`: the player and every identity key whose data is theirs: profiles folded into them, devices linked;
 * 3. `decide`: under the locks of all their profiles, read again and decide (rules/erasure.ts); a player folded or
 *    given a profile since `find` runs the round again;
 * 4. `record`: the erasure's intent, so a crash's repair finds its players (RoundWriter.erase);
 * 5. `mark`: the markers over their profiles, the commit point (a marker lost to another process runs the round again);
 * 6. `finish`: their bits out of every set, their links removed, their activity and raw events out (erasure-finish.ts).
 *    A failure at or after the commit point answers unavailable and leaves this to the background, which the
 *    retry's `settle` waits for;
 * 7. `replays`: the answers kept for players/update retries that name them are forgotten.
 */
export async function erasePlayer(
  deps: ErasureDeps,
  projectId: string,
  identity: Identity,
  step: Step,
): Promise<ErasureOutcome> {
  const { stores, locks, clock, writer, replays, lockWaitLimitMs } = deps;
  await step("settle", () => writer.completedFor(projectId, lockWaitLimitMs));
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const player = await step("find", () => findPlayer(stores, projectId, identity));
    const erased = await locks.run(
      player.keys.map((key) => profileLock(projectId, key)),
      async () => {
        const erasure = await step("decide", () => decideUnderLocks(stores, projectId, player));
        if (!erasure) return null;
        const { lost } = await writer.erase(projectId, erasure, clock.now(), step);
        return lost.size > 0 ? null : erasure;
      },
      { waitLimitMs: lockWaitLimitMs },
    );
    if (erased) {
      await step("replays", () => replays.forget(projectId, erased.identityKeys));
      return { deleted: erased.found, identityKey: erased.identityKey };
    }
  }
  throw new ContentionError("too many concurrent writers to one player; retry");
}

/**
 * The player `identity` names now (the device's player when it is linked, tombstones followed), their slot, their
 * devices, and every identity key whose data is theirs (erasedKeys): what an erasure covers and players/data answers,
 * read without locks.
 */
export async function findPlayer(stores: PlayerStores, projectId: string, identity: Identity) {
  const { key: target, slot } = await liveTarget(stores, projectId, identity);
  const partner = partnerOf(target);
  const devices = partner === null ? [] : await stores.devices.devicesOf(projectId, partner);
  return { target, slot, partner, devices, keys: erasedKeys(target, slot, devices) };
}

/** Under the player's locks: their slots read again and the erasure decided; null when the player changed since `find`. */
async function decideUnderLocks(
  stores: PlayerStores,
  projectId: string,
  { target, partner, devices, keys }: Awaited<ReturnType<typeof findPlayer>>,
): Promise<Erasure | null> {
  const slots = await stores.profiles.readSlots(projectId, keys);
  const now = slots.get(target)!;
  if (now.foldedInto !== null || erasedKeys(target, now, devices).some((key) => !keys.includes(key))) return null;
  const account = partner === null ? null : await stores.accounts.findPlatformUser(projectId, partner);
  return decideErasure(target, keys, slots, devices, account !== null);
}

/** The player `identity` names now: the device's player when it is linked, tombstones followed; with its slot. */
async function liveTarget(
  stores: PlayerStores,
  projectId: string,
  identity: Identity,
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
