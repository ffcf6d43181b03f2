import type { DeviceLink } from "../storage/link-stores.js";
import { deviceKey, partnerKey } from "../rules/identity-key.js";
import { targetOf, type RoundEntry } from "../rules/decide.js";

// The keys of the process's locks (src/db/keyed-lock.ts) that players writes take, always in this nesting:
// a round's profiles, then the project's registry.

export const profileLock = (projectId: string, identityKey: string) => `profile/${projectId}/${identityKey}`;
export const registryLock = (projectId: string) => `registry/${projectId}`;

/** Every profile the entries may read or write, each once: targets, devices with a partner, fold sources. */
export function touchedKeys(
  entries: readonly RoundEntry[],
  links: ReadonlyMap<string, DeviceLink | null>,
  redirects: ReadonlyMap<string, string>,
): string[] {
  const keys = new Set<string>();
  for (const entry of entries) {
    const target = targetOf(entry, (deviceId) => links.get(deviceId) ?? null, redirects);
    if (target !== null) keys.add(target);
    if (entry.deviceId !== null) keys.add(deviceKey(entry.deviceId));
    if (entry.partnerUserId !== null) keys.add(partnerKey(entry.partnerUserId));
    if (entry.foldKey !== null) keys.add(entry.foldKey);
  }
  return [...keys];
}
