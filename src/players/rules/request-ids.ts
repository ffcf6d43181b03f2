import type { ProfileRecord, ProfileSlot } from "./profile.js";

/** How long a call's answer is kept for its retries (UpdateReplays), and its request_id on the profiles it wrote. */
export const REQUEST_ID_KEPT_MS = 24 * 60 * 60_000;

/** The request_ids a profile keeps: a retry after that many other calls with one on the player applies again. */
export const REQUESTS_KEPT = 8;

/**
 * The profiles among `slots` that an earlier attempt of the call with
 * `requestId` wrote within the day request_ids are kept (a retry after a
 * failure): the ones the call wrote itself (`written`) are not.
 */
export function replayedProfiles(
  requestId: string | null,
  slots: ReadonlyMap<string, ProfileSlot>,
  written: ReadonlySet<string>,
  now: Date,
): Set<string> {
  const replayed = new Set<string>();
  if (requestId === null) return replayed;
  const since = now.getTime() - REQUEST_ID_KEPT_MS;
  for (const [key, slot] of slots) {
    const by = slot.profile?.requests?.find((one) => one.id === requestId);
    if (by && by.at.getTime() > since && !written.has(key)) replayed.add(key);
  }
  return replayed;
}

/** The request_ids a profile keeps once `requestId` wrote it at `now`. */
export function requestsAfter(profile: ProfileRecord | null, requestId: string | null, now: Date) {
  const kept = profile?.requests ?? [];
  if (requestId === null) return kept;
  return [...kept.filter((one) => one.id !== requestId), { id: requestId, at: now }].slice(-REQUESTS_KEPT);
}
