import type { KeyedLock } from "../../db/keyed-lock.js";
import type { PlayerActivityChanges } from "../../events/player-directory.js";
import type { CohortSets } from "../cohorts/cohort-sets.js";
import { memberChange, membershipOf, numberOf } from "../rules/cohort-moves.js";
import type { Erasure } from "../rules/erasure.js";
import { partnerOf } from "../rules/identity-key.js";
import type { PlayerStores } from "../storage/stores.js";
import { profileLock } from "./round-locks.js";

/** What writes an erasure's steps after its commit point. */
export interface ErasureFinishDeps {
  stores: PlayerStores;
  cohorts: CohortSets;
  locks: KeyedLock;
  activity?: PlayerActivityChanges;
  /** The config side: the players' exposures to experiments, out of the variants' sets and deleted. */
  exposures?: ErasedExposures;
}

/** What an erasure asks of the experiments (config/exposure-cohorts.ts), before the players' numbers are retired. */
export interface ErasedExposures {
  erase(projectId: string, identityKeys: readonly string[]): Promise<void>;
}

/**
 * An erasure's steps after its commit point (the markers over its profiles): the players out of every set of the
 * players (tags, traits, profiles, experiments' variants, their exposures deleted), their activity out of every count
 * and their raw events deleted (the events side, before this answers: every event received afterwards makes a new
 * player), then their device and account links removed.
 */
export async function finishErasure(deps: ErasureFinishDeps, projectId: string, erasure: Erasure): Promise<void> {
  const { stores, cohorts, activity, exposures } = deps;
  const changes = [...erasure.writes.values()].flatMap(({ read }) => {
    const number = numberOf(read);
    const change = number === undefined ? null : memberChange(number, membershipOf(read), null);
    return change ? [change] : [];
  });
  await cohorts.write(projectId, changes);
  await exposures?.erase(projectId, erasure.identityKeys);
  // The activity before the links: should the events side fail, a player written again before the retry keeps both.
  await activity?.erase(projectId, erasure.identityKeys);
  await unlink(stores, projectId, erasure);
}

/**
 * finishErasure in the background, for a call that failed at or after its commit point: under its players' locks,
 * and only while every marker it wrote is in place. Otherwise it does nothing: no marker written means the call's 503
 * left nothing done; a marker overwritten (a write after the failure made a new player there, whose links and events
 * the erasure must not take), or only some written, leaves the rest to the client's retry.
 */
export async function finishIfMarked(deps: ErasureFinishDeps, projectId: string, erasure: Erasure): Promise<void> {
  const locks = erasure.identityKeys.map((key) => profileLock(projectId, key));
  await deps.locks.run(locks, async () => {
    const slots = await deps.stores.profiles.readSlots(projectId, [...erasure.writes.keys()]);
    // An erasure of links alone writes no marker to check it by: it is left to the client's retry.
    const marked =
      erasure.writes.size > 0 &&
      [...erasure.writes].every(([key, { read }]) => {
        const slot = slots.get(key);
        return slot?.profile === null && slot.foldedInto === null && slot.version === read.version + 1;
      });
    if (marked) await finishErasure(deps, projectId, erasure);
  });
}

/** An erasure's device and account links removed (and the platform user's partner id, if it named the player). */
async function unlink(stores: PlayerStores, projectId: string, { identityKey, devices }: Erasure): Promise<void> {
  const partner = partnerOf(identityKey);
  await stores.devices.unlinkMany(projectId, devices);
  const platformUser = partner === null ? null : await stores.accounts.unlink(projectId, partner);
  if (platformUser !== null) await stores.platformUsers.forgetPartner(projectId, platformUser, partner!);
}
