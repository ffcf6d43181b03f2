import type { MembershipChange } from "../membership/membership-documents.js";
import type { ProfileSlot, SlotContent } from "./profile.js";

/** The tags a profile carries before and after one round: what its membership must follow. */
export interface TagMove {
  identityKey: string;
  before: readonly string[];
  after: readonly string[];
}

export function tagMove(identityKey: string, read: ProfileSlot, next: SlotContent): TagMove {
  return { identityKey, before: read.profile?.tags ?? [], after: "profile" in next ? next.profile.tags : [] };
}

/** Whether the player gained or lost any tag. */
export const movesAnyTag = ({ before, after }: TagMove): boolean =>
  before.length !== after.length || before.some((tag) => !after.includes(tag));

/**
 * Per tag, the players who gained it and lost it: what the round writes to
 * membership, and what a tag series of events would need to move a player's
 * history between tags.
 */
export function membershipChanges(moves: readonly TagMove[]): MembershipChange[] {
  const byTag = new Map<string, { added: string[]; removed: string[] }>();
  const of = (tag: string) => {
    let change = byTag.get(tag);
    if (!change) byTag.set(tag, (change = { added: [], removed: [] }));
    return change;
  };
  for (const { identityKey, before, after } of moves) {
    for (const tag of after) if (!before.includes(tag)) of(tag).added.push(identityKey);
    for (const tag of before) if (!after.includes(tag)) of(tag).removed.push(identityKey);
  }
  return [...byTag].map(([tag, { added, removed }]) => ({ tag, added, removed }));
}

/** players_count changes: one per member gained or lost. */
export function countDeltas(changes: readonly MembershipChange[]): Map<string, number> {
  const deltas = new Map<string, number>();
  for (const { tag, added, removed } of changes) {
    const delta = added.length - removed.length;
    if (delta !== 0) deltas.set(tag, delta);
  }
  return deltas;
}
