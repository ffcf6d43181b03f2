import type { KeyedLock } from "../../db/keyed-lock.js";
import type { Erasure } from "../rules/erasure.js";
import { partnerOf } from "../rules/identity-key.js";
import type { PlayerStores } from "../storage/stores.js";
import { profileLock } from "./round-locks.js";
import type { HistoryFollower } from "./written-profiles.js";

/** What writes an erasure's steps after its commit point. */
export interface ErasureFinishDeps {
  stores: PlayerStores;
  locks: KeyedLock;
  histories?: HistoryFollower;
}

/**
 * An erasure's steps after its commit point (the markers over its profiles): the segment that takes the players'
 * histories and raw events out (every event received afterwards comes after it), the covered keys recorded with its
 * place (charts count them as no one from then on), then the device and account links removed. `tags`: the tags its
 * players left. Answers the record's id, which the erasure's resync settles.
 */
export async function finishErasure(
  { stores, histories }: ErasureFinishDeps,
  projectId: string,
  erasure: Erasure,
  tags: readonly string[],
  now: Date,
): Promise<string> {
  const { identityKeys } = erasure;
  const seq = (await histories?.erase(projectId, identityKeys)) ?? 0;
  const erased = { identityKeys: [], folds: [], tags: [...tags], erasure: { identityKeys, seq } };
  const recorded = await stores.changes.record(projectId, erased, now);
  await unlink(stores, projectId, erasure);
  return recorded;
}

/**
 * finishErasure in the background, for a call that failed at or after its commit point: under its players' locks,
 * and only while every marker it wrote is in place. Otherwise it does nothing and answers undefined: no marker
 * written means the call's 503 left nothing done; a marker overwritten (a write after the failure made a new player
 * there, whose links and events the erasure must not take), or only some written, leaves the rest to the client's retry.
 */
export async function finishIfMarked(
  deps: ErasureFinishDeps,
  projectId: string,
  erasure: Erasure,
  tags: readonly string[],
  now: Date,
): Promise<string | undefined> {
  const locks = erasure.identityKeys.map((key) => profileLock(projectId, key));
  return deps.locks.run(locks, async () => {
    const slots = await deps.stores.profiles.readSlots(projectId, [...erasure.writes.keys()]);
    // An erasure of links alone writes no marker to check it by: it is left to the client's retry.
    const marked =
      erasure.writes.size > 0 &&
      [...erasure.writes].every(([key, { read }]) => {
        const slot = slots.get(key);
        return slot?.profile === null && slot.foldedInto === null && slot.version === read.version + 1;
      });
    return marked ? finishErasure(deps, projectId, erasure, tags, now) : undefined;
  });
}

/** An erasure's device and account links removed (and the platform user's partner id, if it named the player). */
async function unlink(stores: PlayerStores, projectId: string, { identityKey, devices }: Erasure): Promise<void> {
  const partner = partnerOf(identityKey);
  await stores.devices.unlinkMany(projectId, devices);
  const platformUser = partner === null ? null : await stores.accounts.unlink(projectId, partner);
  if (platformUser !== null) await stores.platformUsers.forgetPartner(projectId, platformUser, partner!);
}
