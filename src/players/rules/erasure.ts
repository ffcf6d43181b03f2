import { deviceKey } from "./identity-key.js";
import type { ProfileSlot, SlotContent } from "./profile.js";

/** What erasing one player removes, decided under the locks of every profile it covers. */
export interface Erasure {
  /** The player, as players/get names them. */
  identityKey: string;
  /** Every identity key whose data goes: the player's, each profile folded into them, each device linked to them. */
  identityKeys: string[];
  /** The slots overwritten with an erasure's marker (live profiles and fold tombstones), as read. */
  writes: Map<string, { read: ProfileSlot; next: SlotContent }>;
  /** Device links removed. */
  devices: string[];
  /** Whether the project knew the player: a profile or tombstone of theirs, or a device or account link. */
  found: boolean;
}

/** The identity keys an erasure of `target` covers: its own, the profiles it absorbed, the devices linked to it. */
export function erasedKeys(target: string, slot: ProfileSlot | undefined, devices: readonly string[]): string[] {
  return [...new Set([target, ...(slot?.profile?.absorbed ?? []), ...devices.map(deviceKey)])];
}

/** The erasure of `target`, from the slots of `identityKeys` (erasedKeys) read under their locks. */
export function decideErasure(
  target: string,
  identityKeys: readonly string[],
  slots: ReadonlyMap<string, ProfileSlot>,
  devices: readonly string[],
  accountLinked: boolean,
): Erasure {
  const writes = new Map<string, { read: ProfileSlot; next: SlotContent }>();
  for (const key of identityKeys) {
    const read = slots.get(key);
    if (read && (read.profile || read.foldedInto !== null)) writes.set(key, { read, next: { erased: true } });
  }
  const found = writes.size > 0 || devices.length > 0 || accountLinked;
  return { identityKey: target, identityKeys: [...identityKeys], writes, devices: [...devices], found };
}
