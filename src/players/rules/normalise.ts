/**
 * The normalisation rules of docs/api.md "Players", as pure functions. Every
 * tag and trait key passes through here before it reaches a query or a stored
 * document, so a user string can never become a MongoDB operator or field path.
 */

import { fail, ok, type Result } from "../../errors.js";

export type TraitValue = string | number | boolean;

export const MAX_TAG_CHARS = 64;
export const MAX_TRAIT_KEY_CHARS = 64;
export const MAX_TRAIT_STRING_CHARS = 1024;

/** Why an item was left out; the value of `dropped[].reason`. */
export type DropReason =
  | "not_a_string"
  | "empty"
  | "too_long"
  | "invalid_characters"
  | "reserved_prefix"
  | "reserved_name"
  | "invalid_value"
  | "value_too_long"
  | "not_finite"
  | "out_of_range"
  | "not_a_number";

export type Normalised<T> = Result<T, DropReason>;

const TAG_CHARACTERS = /^[\p{L}\p{Nd}_\-.:]+$/u;
/** Names JavaScript gives objects; code that keeps keys in a plain object loses or mistakes them. */
const RESERVED_TRAIT_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);
const CONTROL_CHARACTER = /\p{Cc}/u;

function charCount(text: string): number {
  return Array.from(text).length;
}

/** "Team A", "team a" and "team_a" all give "team_a". */
export function normaliseTag(raw: unknown): Normalised<string> {
  if (typeof raw !== "string") return fail("not_a_string");
  const tag = raw.trim().toLowerCase().replace(/\s/gu, "_");
  if (tag === "") return fail("empty");
  if (charCount(tag) > MAX_TAG_CHARS) return fail("too_long");
  if (!TAG_CHARACTERS.test(tag)) return fail("invalid_characters");
  if (tag.startsWith("_")) return fail("reserved_prefix");
  return ok(tag);
}

/**
 * Trait keys keep their case; `_` and `$` prefixes and the names
 * `__proto__`, `constructor` and `prototype` are reserved, `.` and control
 * characters are refused.
 */
export function normaliseTraitKey(raw: unknown): Normalised<string> {
  if (typeof raw !== "string") return fail("not_a_string");
  if (raw === "") return fail("empty");
  if (RESERVED_TRAIT_KEYS.has(raw)) return fail("reserved_name");
  if (charCount(raw) > MAX_TRAIT_KEY_CHARS) return fail("too_long");
  if (raw.startsWith("_") || raw.startsWith("$")) return fail("reserved_prefix");
  if (raw.includes(".") || CONTROL_CHARACTER.test(raw)) return fail("invalid_characters");
  return ok(raw);
}

/**
 * Values are kept exactly as sent when they are a string, a finite number or
 * a boolean. A number beyond ±(2^53 − 1) is refused: JSON readers have already
 * rounded it (9007199254740993 arrives as ...992), so keeping it would change
 * the value silently.
 */
export function normaliseTraitValue(raw: unknown): Normalised<TraitValue> {
  if (typeof raw === "boolean") return ok(raw);
  if (typeof raw === "number") return normaliseNumber(raw);
  if (typeof raw === "string") {
    return charCount(raw) > MAX_TRAIT_STRING_CHARS ? fail("value_too_long") : ok(raw);
  }
  return fail("invalid_value");
}

/** A trait's number or an increment's amount: finite and within ±(2^53 − 1), for the reason above. */
export function normaliseNumber(raw: number): Normalised<number> {
  if (!Number.isFinite(raw)) return fail("not_finite");
  return Math.abs(raw) > Number.MAX_SAFE_INTEGER ? fail("out_of_range") : ok(raw);
}

/**
 * One string per trait of a cohort filter, as reads carry it: the JSON of [key, value], so
 * that key and value can never run into each other.
 */
export function traitIndexEntry(key: string, value: TraitValue): string {
  return JSON.stringify([key, value]);
}

/** Escapes every regular-expression metacharacter so user text matches only itself. */
export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
}
