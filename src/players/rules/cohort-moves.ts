import type { FoldMove } from "../../events/queue/segment-store.js";
import type { MemberChange } from "../cohorts/cohort-sets.js";
import { PROFILES, tagSet } from "../cohorts/cohort-sets.js";
import { deviceKey, partnerKey } from "./identity-key.js";
import type { ProfileRecord, ProfileSlot, SlotContent } from "./profile.js";
import type { DeviceLink } from "../storage/link-stores.js";

/** A player's profile as its cohorts see it: absent (no profile, a tombstone, an erasure's marker) or live. */
type Membership = Pick<ProfileRecord, "tags" | "traits"> | null;

/** The number a slot's player has in the sets (a tombstone keeps the one its profile had). */
export const numberOf = (slot: ProfileSlot): number | undefined => slot.profile?.number ?? slot.snapshot?.number;

/**
 * The sets a player joins and leaves, and the traits written, when its profile goes from `before` to `after`: the
 * profiles' set, each tag's, each trait's column. Null when nothing changes.
 */
export function memberChange(number: number, before: Membership, after: Membership): MemberChange | null {
  const had = new Set(before?.tags ?? []);
  const has = new Set(after?.tags ?? []);
  const join = [...has].filter((tag) => !had.has(tag)).map(tagSet);
  const leave = [...had].filter((tag) => !has.has(tag)).map(tagSet);
  if (before === null && after !== null) join.push(PROFILES);
  if (before !== null && after === null) leave.push(PROFILES);
  const traits = new Map<string, string | null>();
  for (const key of new Set([...(before?.traits.keys() ?? []), ...(after?.traits.keys() ?? [])])) {
    const value = after?.traits.has(key) ? JSON.stringify(after.traits.get(key)) : null;
    const was = before?.traits.has(key) ? JSON.stringify(before.traits.get(key)) : null;
    if (value !== was) traits.set(key, value);
  }
  return join.length + leave.length + traits.size === 0 ? null : { number, join, leave, traits };
}

/**
 * The sets a player is in written whole to what its profile holds now (`now`), as far as `tags` and `traitKeys` go
 * (every tag and trait key it may have been written with): a repair's change, right whatever the sets held before.
 */
export function wholeChange(
  number: number,
  now: Membership,
  { tags, traitKeys }: { tags: readonly string[]; traitKeys: readonly string[] },
): MemberChange {
  const has = new Set(now?.tags ?? []);
  const traits = new Map<string, string | null>();
  for (const key of new Set([...traitKeys, ...(now?.traits.keys() ?? [])])) {
    traits.set(key, now?.traits.has(key) ? JSON.stringify(now.traits.get(key)) : null);
  }
  return {
    number,
    join: [...has].map(tagSet).concat(now ? [PROFILES] : []),
    leave: tags
      .filter((tag) => !has.has(tag))
      .map(tagSet)
      .concat(now ? [] : [PROFILES]),
    traits,
  };
}

/** A slot's content as its cohorts see it. */
export const membershipOf = (content: SlotContent | ProfileSlot): Membership =>
  "profile" in content && content.profile ? content.profile : null;

/**
 * The folds a round's writes make: each profile folded into another (its key and the keys it had absorbed) and each
 * device newly linked to a player, whose activity joins the player's.
 */
export function foldMoves(
  writes: readonly { identityKey: string; read: ProfileSlot; next: SlotContent }[],
  links: ReadonlyMap<string, DeviceLink>,
): FoldMove[] {
  const moves = writes.flatMap(({ identityKey, read, next }) =>
    "foldedInto" in next ? [{ from: [identityKey, ...(read.profile?.absorbed ?? [])], into: next.foldedInto }] : [],
  );
  for (const [deviceId, link] of links)
    moves.push({ from: [deviceKey(deviceId)], into: partnerKey(link.partnerUserId) });
  return moves;
}
