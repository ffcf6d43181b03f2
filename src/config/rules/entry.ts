import { InvalidArgumentError } from "../../errors.js";
import { cohortFilter, type CohortFilter } from "../../events/reads/query.js";

/** Any JSON value: what an entry's default and its rules give. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A config key and an experiment's or variant's name: 1 to 64 letters, digits, `_ - . :`. */
export const NAME_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;
export const MAX_VALUE_BYTES = 8 * 1024;
export const MAX_RULES_PER_KEY = 50;
export const MAX_KEYS_PER_PROJECT = 1_000;

/** A rule as a request sends it: the cohort filter of every read, a rollout, the value. */
export interface RuleInput {
  tags: readonly string[];
  tagsMatch: string;
  tagsNone: readonly string[];
  traits?: Readonly<Record<string, unknown>>;
  rolloutPercent?: number;
  value: Json;
}

export interface EntryInput {
  key: string;
  defaultValue: Json;
  rules: readonly RuleInput[];
  inLaunch: boolean;
}

/** A rule as kept: its cohort normalised like every read's, its rollout (null: the whole cohort) and its value. */
export interface ConfigRule {
  cohort: CohortFilter;
  rolloutPercent: number | null;
  value: Json;
}

export interface ConfigEntry {
  key: string;
  defaultValue: Json;
  rules: ConfigRule[];
  inLaunch: boolean;
}

const invalid = (message: string) => new InvalidArgumentError(message);

/** The entry a request asks for, checked against the limits of docs/api.md ("Config"), each failure naming its field. */
export function checkEntry(input: EntryInput): ConfigEntry {
  checkName("key", input.key);
  if (input.rules.length > MAX_RULES_PER_KEY) {
    throw invalid(`rules: at most ${MAX_RULES_PER_KEY} a key, got ${input.rules.length}`);
  }
  return {
    key: input.key,
    defaultValue: checkValue("default_value", input.defaultValue),
    rules: input.rules.map((rule, i) => ({
      cohort: filterOf(`rules[${i}]`, rule),
      rolloutPercent: checkRollout(`rules[${i}].rollout_percent`, rule.rolloutPercent),
      value: checkValue(`rules[${i}].value`, rule.value),
    })),
    inLaunch: input.inLaunch,
  };
}

export function checkName(field: string, name: string): void {
  if (!NAME_PATTERN.test(name)) throw invalid(`${field}: 1 to 64 characters of letters, digits, _ - . :`);
}

/** The filter of a rule or an experiment, normalised as every read's (query.ts), a failure naming `field`'s part. */
export function filterOf(
  field: string,
  input: Pick<RuleInput, "tags" | "tagsMatch" | "tagsNone" | "traits">,
): CohortFilter {
  try {
    return cohortFilter(input);
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw invalid(`${field}.${error.message}`);
    throw error;
  }
}

function checkValue(field: string, value: Json): Json {
  const bytes = Buffer.byteLength(JSON.stringify(value));
  if (bytes > MAX_VALUE_BYTES) throw invalid(`${field}: at most ${MAX_VALUE_BYTES} bytes as JSON, got ${bytes}`);
  return value;
}

/** 0 to 100 with at most two decimals: a whole number of buckets (bucket.ts). */
function checkRollout(field: string, percent: number | undefined): number | null {
  if (percent === undefined) return null;
  const hundredths = Math.round(percent * 100);
  if (!(percent >= 0 && percent <= 100) || Math.abs(percent * 100 - hundredths) > 1e-6) {
    throw invalid(`${field}: a percentage from 0 to 100 with at most two decimals, got ${percent}`);
  }
  return hundredths / 100;
}
