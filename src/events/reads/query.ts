import { InvalidArgumentError } from "../../errors.js";
import {
  normaliseTag,
  normaliseTraitKey,
  normaliseTraitValue,
  traitIndexEntry,
} from "../../players/rules/normalise.js";
import { daysBetween, parseDay } from "../rollup-keys.js";

export const MAX_RANGE_DAYS = 366;

/** What every read endpoint with a date range accepts, as sent. */
export interface EventQueryInput {
  from: string;
  to: string;
  tags: readonly string[];
  tagsMatch: string;
  traits?: Readonly<Record<string, unknown>>;
  tagsNone: readonly string[];
}

/** A cohort: players carrying any or all of `tags`, none of `tagsNone`, and every trait of `traits`. Empty: everyone. */
export interface CohortFilter {
  tags: string[];
  tagsMatch: "any" | "all";
  /** traitIndexEntry(key, value) of each trait that must match. */
  traits: string[];
  tagsNone: string[];
}

export interface EventQuery {
  /** Every day of the range, inclusive, in order. */
  days: string[];
  cohort: CohortFilter;
}

const invalid = (message: string) => new InvalidArgumentError(message);

/**
 * The one reading of a date range and cohort filters, shared by Trends,
 * ListNames and any later read with a date range: inclusive UTC dates, at
 * most 366 days, `from` not after `to`; tags and traits normalised like writes.
 */
export function eventQuery(input: EventQueryInput): EventQuery {
  const from = parseDay(input.from);
  const to = parseDay(input.to);
  if (!from) throw invalid("from: a UTC date YYYY-MM-DD");
  if (!to) throw invalid("to: a UTC date YYYY-MM-DD");
  if (from > to) throw invalid("from: must not be after to");
  const days = daysBetween(from, to);
  if (days.length > MAX_RANGE_DAYS) throw invalid(`to: a range covers at most ${MAX_RANGE_DAYS} days`);
  return { days, cohort: cohortFilter(input) };
}

export function cohortFilter(input: Pick<EventQueryInput, "tags" | "tagsMatch" | "traits" | "tagsNone">): CohortFilter {
  const tagsMatch = input.tagsMatch === "" ? "any" : input.tagsMatch;
  if (tagsMatch !== "any" && tagsMatch !== "all") throw invalid('tags_match: must be "any" or "all"');
  return {
    tags: filterTags("tags", input.tags),
    tagsMatch,
    traits: filterTraits(input.traits),
    tagsNone: filterTags("tags_none", input.tagsNone),
  };
}

/** Filter tags, normalised like writes ("Team A" is team_a), each once. */
export function filterTags(field: string, raws: readonly string[]): string[] {
  const tags = raws.map((raw) => {
    const tag = normaliseTag(raw);
    if (!tag.ok) throw invalid(`${field}: ${JSON.stringify(raw)} is not a valid tag (${tag.error})`);
    return tag.value;
  });
  return [...new Set(tags)];
}

/** traitIndexEntry() of each filter trait, keys and values normalised like writes. */
export function filterTraits(traits: Readonly<Record<string, unknown>> | undefined): string[] {
  return Object.entries(traits ?? {}).map(([rawKey, rawValue]) => {
    const key = normaliseTraitKey(rawKey);
    if (!key.ok) throw invalid(`traits: ${JSON.stringify(rawKey)} is not a valid trait key (${key.error})`);
    const value = normaliseTraitValue(rawValue);
    if (!value.ok) throw invalid(`traits: the value of ${JSON.stringify(rawKey)} must be a string, number or boolean`);
    return traitIndexEntry(key.value, value.value);
  });
}

export const isEveryone = (cohort: CohortFilter): boolean =>
  cohort.tags.length === 0 && cohort.traits.length === 0 && cohort.tagsNone.length === 0;
