import { InvalidArgumentError } from "../../errors.js";
import { MAX_TRAITS_PER_PLAYER } from "../../players/rules/operations.js";
import {
  normaliseTag,
  normaliseTraitKey,
  normaliseTraitValue,
  traitIndexEntry,
} from "../../players/rules/normalise.js";
import { daysBetween, parseDay } from "../rollup-keys.js";

export const MAX_RANGE_DAYS = 366;
const DAY_MS = 24 * 60 * 60 * 1000;

/** The cohort filters every read of players or events accepts (search, export, trends, names, retention, active), as sent. */
export interface CohortFilterInput {
  tags: readonly string[];
  /** "any" (absent) or "all": the proto's rule admits nothing else. */
  tagsMatch?: string;
  traits?: Readonly<Record<string, unknown>>;
  tagsNone: readonly string[];
  /** An experiment's name: only its exposed players (empty or absent: no such filter). */
  experiment?: string;
  /** Of those, the exposed players of these variants (empty: of every variant). */
  variants?: readonly string[];
}

/** What every read endpoint with a date range accepts, as sent. */
export interface EventQueryInput extends CohortFilterInput {
  from: string;
  to: string;
}

/** A cohort: players carrying any or all of `tags`, none of `tagsNone`, and every trait of `traits`. Empty: everyone. */
export interface CohortFilter {
  tags: string[];
  tagsMatch: "any" | "all";
  /** traitIndexEntry(key, value) of each trait that must match. */
  traits: string[];
  tagsNone: string[];
  /** Only the players exposed to the experiment, to `variants` of it (empty: to any). */
  experiment?: ExperimentFilter;
}

export interface ExperimentFilter {
  name: string;
  variants: string[];
}

export interface EventQuery {
  /** Every day of the range, inclusive, in order. */
  days: string[];
  cohort: CohortFilter;
}

const invalid = (message: string) => new InvalidArgumentError(message);

/**
 * The one reading of a date range and cohort filters, shared by every read with a date range (trends, names,
 * retention, active): inclusive UTC dates, at most 366 days, `from` not after `to`; tags and traits normalised like
 * writes, at most 50 traits (cohortFilter). What the proto states (the dates' pattern, at most 50 tags, tags_none and
 * names, an event name's characters, tags_match's values) its rules have checked on every protocol.
 */
export function eventQuery(input: EventQueryInput): EventQuery {
  const from = parseDay(input.from);
  const to = parseDay(input.to);
  if (!from) throw invalid("from: a UTC date YYYY-MM-DD");
  if (!to) throw invalid("to: a UTC date YYYY-MM-DD");
  if (from > to) throw invalid("from: must not be after to");
  // Counted before the days are listed: a `from` of year 0 would list 740,000 of them.
  const length = (to.getTime() - from.getTime()) / DAY_MS + 1;
  if (length > MAX_RANGE_DAYS) {
    throw invalid(`from: a range covers at most ${MAX_RANGE_DAYS} days; ${input.from} to ${input.to} covers ${length}`);
  }
  return { days: daysBetween(from, to), cohort: cohortFilter(input) };
}

/** The cohort filters of any read (cohort reads, search, export): tags and traits normalised like writes. */
export function cohortFilter(input: CohortFilterInput): CohortFilter {
  return {
    tags: filterTags("tags", input.tags),
    tagsMatch: input.tagsMatch === "all" ? "all" : "any",
    traits: filterTraits(input.traits),
    tagsNone: filterTags("tags_none", input.tagsNone),
    ...experimentFilter(input),
  };
}

/** The experiment filter as sent; whether the experiment and its variants exist is the read's to check (CohortSets). */
function experimentFilter({ experiment, variants = [] }: CohortFilterInput): { experiment?: ExperimentFilter } {
  if (!experiment) {
    if (variants.length > 0) throw invalid("variants: name the experiment they are variants of (experiment)");
    return {};
  }
  return { experiment: { name: experiment, variants: [...new Set(variants)] } };
}

/** The event names a read counts, each once; none: every name. Their count and characters are the proto's rules. */
export const eventNames = (names: readonly string[]): string[] => [...new Set(names)];

/** Filter tags, normalised like writes ("Team A" is team_a), each once. */
export function filterTags(field: string, raws: readonly string[]): string[] {
  const tags = raws.map((raw) => {
    const tag = normaliseTag(raw);
    if (!tag.ok) throw invalid(`${field}: ${JSON.stringify(raw)} is not a valid tag (${tag.error})`);
    return tag.value;
  });
  return [...new Set(tags)];
}

/** traitIndexEntry() of each filter trait, keys and values normalised like writes; at most what a player carries. */
function filterTraits(traits: Readonly<Record<string, unknown>> | undefined): string[] {
  const pairs = Object.entries(traits ?? {});
  if (pairs.length > MAX_TRAITS_PER_PLAYER) throw invalid(`traits: at most ${MAX_TRAITS_PER_PLAYER} traits`);
  return pairs.map(([rawKey, rawValue]) => {
    const key = normaliseTraitKey(rawKey);
    if (!key.ok) throw invalid(`traits: ${JSON.stringify(rawKey)} is not a valid trait key (${key.error})`);
    const value = normaliseTraitValue(rawValue);
    if (!value.ok) throw invalid(`traits: the value of ${JSON.stringify(rawKey)} is not usable (${value.error})`);
    return traitIndexEntry(key.value, value.value);
  });
}

export const isEveryone = (cohort: CohortFilter): boolean =>
  cohort.tags.length === 0 && cohort.traits.length === 0 && cohort.tagsNone.length === 0 && !cohort.experiment;
