import type { CohortSets } from "../cohorts/cohort-sets.js";
import { membershipOf, numberOf, wholeChange } from "../rules/cohort-moves.js";
import type { ProfileSlot } from "../rules/profile.js";
import type { RoundIntent } from "../storage/intent-store.js";
import type { PlayerStores } from "../storage/stores.js";

/**
 * The sets of an intent's players made to follow their profiles as they are now (a crash's repair, a failed round's
 * completion, a round another instance wrote over): for each player, every set of the intent's tags and trait keys
 * written to what its profile holds. Idempotent.
 */
export async function syncFromProfiles(stores: PlayerStores, cohorts: CohortSets, intent: RoundIntent): Promise<void> {
  const { projectId, players } = intent;
  const slots = await stores.profiles.readSlots(
    projectId,
    players.map(({ key }) => key),
  );
  const changes = players.flatMap(({ key, number: recorded }) => {
    const slot = slots.get(key)!;
    const number = numberOf(slot) ?? recorded;
    return number === undefined ? [] : [wholeChange(number, membershipOf(slot), intent)];
  });
  await cohorts.write(projectId, changes);
}

/** The intent of a round's writes: their players and numbers, and every tag and trait key they had or have. */
export function intentOf(
  projectId: string,
  writes: readonly {
    identityKey: string;
    read: ProfileSlot;
    number?: number;
    after: ReturnType<typeof membershipOf>;
  }[],
): RoundIntent {
  const tags = new Set<string>();
  const traitKeys = new Set<string>();
  for (const { read, after } of writes) {
    for (const one of [membershipOf(read), after]) {
      for (const tag of one?.tags ?? []) tags.add(tag);
      for (const key of one?.traits.keys() ?? []) traitKeys.add(key);
    }
  }
  return {
    projectId,
    players: writes.map(({ identityKey, number }) => ({ key: identityKey, ...(number !== undefined && { number }) })),
    tags: [...tags],
    traitKeys: [...traitKeys],
  };
}

/**
 * Completes the intents recorded before `before` (rounds a crash cut short, or whose completion a stop cut short):
 * their players' sets made to follow their profiles, then the intents forgotten. How many there were.
 */
export async function repairSets(stores: PlayerStores, cohorts: CohortSets, before: Date): Promise<number> {
  const stale = await stores.intents.stale(before);
  for (const intent of stale) {
    await syncFromProfiles(stores, cohorts, intent);
    await stores.intents.settle(intent.id);
  }
  return stale.length;
}
