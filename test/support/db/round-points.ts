import type { PlayerStores } from "../../../src/players/storage/stores.js";

/**
 * Where a test stops a players round, at the store calls around its commit
 * point (the write path has no hooks of its own):
 * - `afterTombstones`: after a round's write of its tombstones (none, often)
 *   and before the write of its profiles;
 * - `afterProfileWrites`: after the profiles, before their tag membership.
 */
export type RoundPoint = "afterTombstones" | "afterProfileWrites";

/** `stores` with `fault` run at `point` of every round: a throw there fails the round as a database error would. */
export function atRoundPoint(stores: PlayerStores, point: RoundPoint, fault: () => unknown): PlayerStores {
  if (point === "afterProfileWrites") {
    const apply = stores.membership.apply.bind(stores.membership);
    stores.membership.apply = async (...args) => {
      await fault();
      return apply(...args);
    };
  } else {
    const writeSlots = stores.profiles.writeSlots.bind(stores.profiles);
    stores.profiles.writeSlots = async (projectId, writes) => {
      const lost = await writeSlots(projectId, writes);
      // The round's first write: its tombstones (each names the profile it folds into), or nothing to fold.
      if (writes.every((write) => "foldedInto" in write.next)) await fault();
      return lost;
    };
  }
  return stores;
}
