import type { DeviceLink } from "../storage/link-stores.js";
import { deviceKey, partnerKey } from "../rules/identity-key.js";
import type { PlayerChange } from "../changed-players.js";
import { cohortsChanged } from "../rules/operations.js";
import type { ProfileSlot, SlotContent } from "../rules/profile.js";

/** A profile a round wrote; `foldedInto` when it was folded into another (a tombstone now, or a device just linked). */
export interface WrittenProfile {
  identityKey: string;
  foldedInto: string | null;
}

/** How event histories follow the rounds' writes (the events capability). */
export interface HistoryFollower {
  /**
   * After a round's profiles and membership are written: queues the move of
   * the histories of `written`, which settles the changed players recorded
   * under the stamp `recorded` (ChangedPlayers) once applied.
   */
  queue(projectId: string, written: readonly WrittenProfile[], recorded: string | null): Promise<void>;
  /**
   * At an erasure, once the markers over its profiles are written: queues the segment that takes the histories of
   * `identityKeys` out of every count and deletes their raw events; answers its place in the queue (events after it
   * are new).
   */
  erase(projectId: string, identityKeys: readonly string[]): Promise<number>;
}

/** The change a round records before it writes: `written` as players and folds, and the tags whose membership moves. */
export function playerChange(written: readonly WrittenProfile[], tags: readonly string[]): PlayerChange {
  const identityKeys = [...new Set(written.filter((one) => one.foldedInto === null).map((one) => one.identityKey))];
  const folds = written.flatMap(({ identityKey, foldedInto }) =>
    foldedInto === null ? [] : [{ from: identityKey, into: foldedInto }],
  );
  return { identityKeys, folds, tags: [...tags] };
}

/**
 * What a round wrote that moves event histories: the profiles whose write held and whose tags or
 * traits changed (a history follows only those), the folded ones, and each
 * device newly linked (folded into its player, whether or not it had a profile of its own).
 */
export function writtenProfiles(
  writes: readonly { identityKey: string; read: ProfileSlot; next: SlotContent }[],
  written: ReadonlySet<string>,
  links: ReadonlyMap<string, DeviceLink>,
): WrittenProfile[] {
  const profiles = writes
    .filter(
      (w) =>
        written.has(w.identityKey) &&
        ("foldedInto" in w.next || ("profile" in w.next && cohortsChanged(w.read.profile, w.next.profile))),
    )
    .map(({ identityKey, next }) => ({ identityKey, foldedInto: "foldedInto" in next ? next.foldedInto : null }));
  const devices = [...links].map(([deviceId, link]) => ({
    identityKey: deviceKey(deviceId),
    foldedInto: partnerKey(link.partnerUserId),
  }));
  return [...profiles, ...devices];
}
