import type { CohortFilter, ExperimentFilter } from "../../events/reads/query.js";
import type { TraitValue } from "./normalise.js";

/** A player's tags and traits: what a cohort filter is matched against in memory (a config rule, an eligibility). */
export interface PlayerCohorts {
  tags: readonly string[];
  traits: ReadonlyMap<string, TraitValue>;
}

/** A cohort of players: the tags they carry (any, all, none of) and the traits they hold. */
export interface ProfileQuery {
  tagsAny?: string[];
  tagsAll?: string[];
  /** Tags none of which a match carries. */
  tagsNone?: string[];
  /** traitIndexEntry() of each trait that must match. */
  traits?: string[];
  /** Only players exposed to the experiment (the sets know, not the profile). */
  experiment?: ExperimentFilter;
}

/** The query of a read's cohort filter (query.ts): its tags any or all, none of tags_none, its traits. */
export function profileQueryOf(filter: CohortFilter): ProfileQuery {
  const query: ProfileQuery = {};
  if (filter.tags.length > 0) query[filter.tagsMatch === "all" ? "tagsAll" : "tagsAny"] = filter.tags;
  if (filter.traits.length > 0) query.traits = filter.traits;
  if (filter.tagsNone.length > 0) query.tagsNone = filter.tagsNone;
  if (filter.experiment) query.experiment = filter.experiment;
  return query;
}

/** Whether a profile is in the cohort of `query`: its tags and traits checked in memory. */
export function profileMatcher(query: ProfileQuery): (profile: PlayerCohorts) => boolean {
  const wanted = traitPairs(query.traits ?? []);
  return (profile) => hasTags(profile, query) && hasTraits(profile, wanted);
}

/** A player carries at most 50 tags: `includes` beats building a set per profile. */
function hasTags({ tags }: PlayerCohorts, { tagsAny, tagsAll, tagsNone }: ProfileQuery): boolean {
  // Plain loops: a search or chart without tags tests every profile of the project, once per cohort.
  if (tagsAny) {
    let any = false;
    for (let i = 0; i < tagsAny.length && !any; i++) any = tags.includes(tagsAny[i]);
    if (!any) return false;
  }
  for (let i = 0; tagsAll && i < tagsAll.length; i++) if (!tags.includes(tagsAll[i])) return false;
  for (let i = 0; tagsNone && i < tagsNone.length; i++) if (tags.includes(tagsNone[i])) return false;
  return true;
}

/** The query's traits (traitIndexEntry() of each) as key and value, compared with a profile's without encoding them. */
export const traitPairs = (traits: readonly string[]) =>
  traits.map((entry) => JSON.parse(entry) as [string, TraitValue]);

export function hasTraits(profile: PlayerCohorts, wanted: readonly [string, TraitValue][]): boolean {
  return wanted.every(([key, value]) => profile.traits.get(key) === value);
}
