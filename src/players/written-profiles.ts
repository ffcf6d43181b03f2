import type { DeviceLink } from "./device-link-store.js";
import { deviceKey, partnerKey } from "./identity-key.js";
import type { SlotContent } from "./profile-store.js";

/** A profile a round wrote; `foldedInto` when it was folded into another (a tombstone now, or a device just linked). */
export interface WrittenProfile {
  identityKey: string;
  foldedInto: string | null;
}

/**
 * What a round wrote, as the write path's onWritten hook tells it: the
 * profiles whose write held, the folded ones, and each device newly linked
 * (folded into its player, whether or not it had a profile of its own).
 */
export function writtenProfiles(
  writes: readonly { identityKey: string; next: SlotContent }[],
  written: ReadonlySet<string>,
  links: ReadonlyMap<string, DeviceLink>,
): WrittenProfile[] {
  const profiles = writes
    .filter((w) => written.has(w.identityKey))
    .map(({ identityKey, next }) => ({ identityKey, foldedInto: "foldedInto" in next ? next.foldedInto : null }));
  const devices = [...links].map(([deviceId, link]) => ({
    identityKey: deviceKey(deviceId),
    foldedInto: partnerKey(link.partnerUserId),
  }));
  return [...profiles, ...devices];
}
