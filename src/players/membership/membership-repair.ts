import type { Logger } from "../../log.js";
import type { MembershipChange } from "./membership-documents.js";
import type { PlayerStores } from "../storage/stores.js";

/** Players one step of the repair completes: a read of their profiles and a write of their membership. */
const REPAIR_SLICE = 500;

const slicesOf = (keys: readonly string[]): string[][] =>
  Array.from({ length: Math.ceil(keys.length / REPAIR_SLICE) }, (_, i) =>
    keys.slice(i * REPAIR_SLICE, (i + 1) * REPAIR_SLICE),
  );

/** The players whose membership of `tags` a round may have left behind their profiles. */
export interface RoundMembership {
  projectId: string;
  identityKeys: readonly string[];
  tags: readonly string[];
}

export interface RepairOptions {
  stores: PlayerStores;
  now: Date;
  /**
   * Changes recorded less than this long ago may still be a round running in
   * another process and are left alone; 0 where one process owns the database.
   */
  graceMs: number;
  log?: Logger;
}

/**
 * Makes tag membership and players_count match the profiles for the changed
 * players still recorded (a crash between a round's profile write and its
 * membership write leaves some) and the tags their rounds moved,
 * REPAIR_SLICE players a step.
 */
export async function repairMembership(options: RepairOptions): Promise<void> {
  const { stores } = options;
  const before = new Date(options.now.getTime() - options.graceMs);
  const rounds: RoundMembership[] = (await stores.changes.stale(before))
    .flatMap(({ projectId, players, tags }) =>
      slicesOf(players.map((player) => player.identityKey)).map((identityKeys) => ({ projectId, identityKeys, tags })),
    )
    .filter((round) => round.tags.length > 0);
  for (const round of rounds) await completeMembership(stores, round);
  await stores.membership.writeBehindNow();
  const players = rounds.reduce((n, round) => n + round.identityKeys.length, 0);
  if (rounds.length > 0) options.log?.info({ players, steps: rounds.length }, "tag membership repaired after a crash");
}

/**
 * Completes one round's membership: its players' membership of its tags
 * follows their profiles as they are, and the counts of its tags are set to
 * the size of their membership. Idempotent; the caller keeps other writers of
 * those players and of the project's membership and counts away.
 */
export async function completeMembership(stores: PlayerStores, round: RoundMembership): Promise<void> {
  const slots = await stores.profiles.readSlots(round.projectId, round.identityKeys);
  const changes: MembershipChange[] = round.tags.map((tag) => ({
    tag,
    added: round.identityKeys.filter((key) => slots.get(key)?.profile?.tags.includes(tag)),
    removed: round.identityKeys.filter((key) => !slots.get(key)?.profile?.tags.includes(tag)),
  }));
  await stores.membership.apply(round.projectId, changes);
  await recount(stores, round.projectId, round.tags);
}

/**
 * Sets players_count of `tags` to the size of their membership: its pages' lengths (from the owner's memory), or the
 * profiles' tag index.
 */
async function recount(stores: PlayerStores, projectId: string, tags: readonly string[]): Promise<void> {
  const ids = [...(await stores.tags.findIds(projectId, tags))];
  const registered = ids.map(([tag]) => tag);
  const sizes = stores.membership.materialised
    ? await stores.membership.sizes(projectId, registered)
    : await stores.profiles.countTagged(projectId, registered);
  await stores.membership.setCounts(projectId, new Map(ids.map(([, id], i) => [id, sizes[i]])));
}
