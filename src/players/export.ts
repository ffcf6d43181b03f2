import type { ProfileRecord } from "./rules/profile.js";
import { profileMatcher, type ProfileQuery } from "./rules/profile-match.js";
import type { PlayerStores } from "./storage/stores.js";

/** Profiles a `getMore` of an export brings: at most this many are held at once on the database's path. */
export const EXPORT_BATCH = 1_000;

/**
 * Every profile of a cohort, in identity key order, from one consistent read
 * (docs/api.md): where the owner's memory holds the project (the embedded
 * engine), its list of profiles in key order as it is at the start (a written
 * profile is replaced there, never changed in place, so the list taken then
 * stays as it was), each matched as the caller consumes it; elsewhere one
 * cursor over the profiles' `_id` index, read a batch at a time.
 */
export async function* exportProfiles(
  stores: PlayerStores,
  projectId: string,
  query: ProfileQuery,
): AsyncGenerator<ProfileRecord> {
  const matches = profileMatcher(query);
  const profiles =
    (await stores.profiles.liveProfiles(projectId)) ?? stores.profiles.inKeyOrder(projectId, query, EXPORT_BATCH);
  for await (const profile of profiles) if (matches(profile)) yield profile;
}
