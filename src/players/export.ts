import { compareKeys } from "./rules/identity-key.js";
import type { ProfileRecord } from "./rules/profile.js";
import { profileMatcher, type ProfileQuery } from "./rules/profile-match.js";
import type { PlayerStores } from "./storage/stores.js";

/** Profiles a `getMore` of an export brings: at most this many are held at once on the database's path. */
export const EXPORT_BATCH = 1_000;

/**
 * Every profile of a cohort, in identity key order, from one consistent read
 * (docs/api.md): where the owner's memory holds the project (the embedded
 * engine), its profiles as they are at the start (a written profile is
 * replaced there, never changed in place, so the list taken then stays as it
 * was), sorted by key; elsewhere one cursor over the profiles' `_id` index,
 * read a batch at a time as the caller consumes it.
 */
export async function* exportProfiles(
  stores: PlayerStores,
  projectId: string,
  query: ProfileQuery,
): AsyncGenerator<ProfileRecord> {
  const matches = profileMatcher(query);
  const remembered = await stores.profiles.liveProfiles(projectId);
  if (remembered) {
    yield* remembered.filter(matches).sort((a, b) => compareKeys(a.identityKey, b.identityKey));
    return;
  }
  for await (const profile of stores.profiles.inKeyOrder(projectId, query, EXPORT_BATCH)) {
    if (matches(profile)) yield profile;
  }
}
