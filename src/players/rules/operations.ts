import { fail } from "../../errors.js";
import {
  normaliseNumber,
  normaliseTag,
  normaliseTraitKey,
  normaliseTraitValue,
  type DropReason,
  type TraitValue,
} from "./normalise.js";

/**
 * What a player carries: the part of a profile that update entries change.
 * Pure functions over it decide every update; the store only persists the result.
 */
export interface PlayerState {
  tags: string[];
  traits: Map<string, TraitValue>;
}

export const MAX_TAGS_PER_PLAYER = 50;
export const MAX_TRAITS_PER_PLAYER = 50;

/** One update entry as sent, before normalisation. `tags` undefined means "not sent" (not "clear"). */
export interface EntryInput {
  tags?: unknown[];
  tagsAdd: readonly string[];
  tagsRemove: readonly string[];
  traits?: Readonly<Record<string, unknown>>;
  traitsOnce?: Readonly<Record<string, unknown>>;
  traitsIncrement: Readonly<Record<string, number>>;
  traitsUnset: readonly string[];
}

export interface DroppedItem {
  field: string;
  item: string;
  reason: DropReason;
}

/** An entry after normalisation: only items that can be applied, plus what was dropped. */
export interface Operations {
  tags?: string[];
  tagsAdd: string[];
  tagsRemove: string[];
  traits: [string, TraitValue][];
  traitsOnce: [string, TraitValue][];
  traitsIncrement: [string, number][];
  traitsUnset: string[];
  /** The first raw form (trimmed) of each tag in the entry: the label of a tag new to the project. */
  labels: Map<string, string>;
  dropped: DroppedItem[];
}

const FIELD_ORDER = ["tags", "tags_add", "tags_remove", "traits", "traits_once", "traits_increment", "traits_unset"];

/** Dropped items in the order their fields apply (stable within a field). */
export function inFieldOrder(items: readonly DroppedItem[]): DroppedItem[] {
  return [...items].sort((a, b) => FIELD_ORDER.indexOf(a.field) - FIELD_ORDER.indexOf(b.field));
}

export type PlayerLimitCode = "player_tag_limit" | "player_trait_limit";

function itemText(raw: unknown): string {
  return typeof raw === "string" ? raw : (JSON.stringify(raw) ?? String(raw));
}

/** What normalising an entry collects besides the operations: dropped items and the raw label of each tag. */
interface Collected {
  dropped: DroppedItem[];
  labels: Map<string, string>;
}

function tagList(field: string, raws: readonly unknown[], collected: Collected): string[] {
  const tags: string[] = [];
  for (const raw of raws) {
    const result = normaliseTag(raw);
    if (!result.ok) {
      collected.dropped.push({ field, item: itemText(raw), reason: result.error });
      continue;
    }
    if (!collected.labels.has(result.value)) collected.labels.set(result.value, (raw as string).trim());
    if (!tags.includes(result.value)) tags.push(result.value);
  }
  return tags;
}

function keyList(field: string, raws: readonly string[], collected: Collected): string[] {
  const keys: string[] = [];
  for (const raw of raws) {
    const result = normaliseTraitKey(raw);
    if (result.ok) keys.push(result.value);
    else collected.dropped.push({ field, item: raw, reason: result.error });
  }
  return keys;
}

function traitPairs(
  field: string,
  object: Readonly<Record<string, unknown>> | undefined,
  collected: Collected,
): [string, TraitValue][] {
  const pairs: [string, TraitValue][] = [];
  for (const [rawKey, rawValue] of Object.entries(object ?? {})) {
    const key = normaliseTraitKey(rawKey);
    const value = normaliseTraitValue(rawValue);
    if (!key.ok) collected.dropped.push({ field, item: rawKey, reason: key.error });
    else if (!value.ok) collected.dropped.push({ field, item: rawKey, reason: value.error });
    else pairs.push([key.value, value.value]);
  }
  return pairs;
}

function increments(object: Readonly<Record<string, number>>, collected: Collected): [string, number][] {
  const pairs: [string, number][] = [];
  for (const [rawKey, amount] of Object.entries(object)) {
    const key = normaliseTraitKey(rawKey);
    const number = normaliseNumber(amount);
    if (!key.ok) collected.dropped.push({ field: "traits_increment", item: rawKey, reason: key.error });
    else if (!number.ok) collected.dropped.push({ field: "traits_increment", item: rawKey, reason: number.error });
    else pairs.push([key.value, number.value]);
  }
  return pairs;
}

export function normaliseEntry(input: EntryInput): Operations {
  const collected: Collected = { dropped: [], labels: new Map() };
  // Built field by field in the order of application, so `dropped` lists items in that order too.
  const tags = input.tags === undefined ? undefined : tagList("tags", input.tags, collected);
  const tagsAdd = tagList("tags_add", input.tagsAdd, collected);
  const tagsRemove = tagList("tags_remove", input.tagsRemove, collected);
  const traits = traitPairs("traits", input.traits, collected);
  const traitsOnce = traitPairs("traits_once", input.traitsOnce, collected);
  const traitsIncrement = increments(input.traitsIncrement, collected);
  const traitsUnset = keyList("traits_unset", input.traitsUnset, collected);
  return { tags, tagsAdd, tagsRemove, traits, traitsOnce, traitsIncrement, traitsUnset, ...collected };
}

/**
 * Applies the operations in their documented order (docs/api.md): tags, tags_add,
 * tags_remove, traits, traits_once, traits_increment, traits_unset. Returns
 * the new state and the increments dropped because the current value is not a
 * number or the sum would leave ±(2^53 − 1).
 */
export function applyOperations(state: PlayerState, ops: Operations): { state: PlayerState; dropped: DroppedItem[] } {
  let tags = ops.tags ? [...ops.tags] : [...state.tags];
  for (const tag of ops.tagsAdd) if (!tags.includes(tag)) tags.push(tag);
  tags = tags.filter((tag) => !ops.tagsRemove.includes(tag));

  const traits = new Map(state.traits);
  for (const [key, value] of ops.traits) traits.set(key, value);
  for (const [key, value] of ops.traitsOnce) if (!traits.has(key)) traits.set(key, value);
  const dropped: DroppedItem[] = [];
  for (const [key, amount] of ops.traitsIncrement) {
    const current = traits.get(key) ?? 0;
    // A sum past ±(2^53 − 1) would be stored rounded: dropped like such an amount, the trait keeps its value.
    const sum = typeof current === "number" ? normaliseNumber(current + amount) : fail("not_a_number" as const);
    if (sum.ok) traits.set(key, sum.value);
    else dropped.push({ field: "traits_increment", item: key, reason: sum.error });
  }
  for (const key of ops.traitsUnset) traits.delete(key);
  return { state: { tags, traits }, dropped };
}

/** Whether the tags (in any order) or traits, what a player's cohorts derive from, differ between two states. */
export function cohortsChanged(before: PlayerState | null, after: PlayerState): boolean {
  const tags = before?.tags ?? [];
  const traits = before?.traits ?? new Map();
  return (
    tags.length !== after.tags.length ||
    !after.tags.every((tag) => tags.includes(tag)) ||
    traits.size !== after.traits.size ||
    [...after.traits].some(([key, value]) => traits.get(key) !== value)
  );
}

/** The per-player limit a state breaks, if any. */
export function playerLimitBroken(state: PlayerState): PlayerLimitCode | null {
  if (state.tags.length > MAX_TAGS_PER_PLAYER) return "player_tag_limit";
  if (state.traits.size > MAX_TRAITS_PER_PLAYER) return "player_trait_limit";
  return null;
}

/**
 * Folds a device's state into the real player's: tags unioned and traits
 * added where the real player lacks the key, both within the per-player limits
 * (what does not fit is left out; the real player's own data always stays).
 */
export function foldDevice(real: PlayerState, device: PlayerState): PlayerState {
  const tags = [...real.tags];
  for (const tag of device.tags) {
    if (tags.length >= MAX_TAGS_PER_PLAYER) break;
    if (!tags.includes(tag)) tags.push(tag);
  }
  const traits = new Map(real.traits);
  for (const [key, value] of device.traits) {
    if (traits.size >= MAX_TRAITS_PER_PLAYER) break;
    if (!traits.has(key)) traits.set(key, value);
  }
  return { tags, traits };
}

/** An entry that changes nothing: a fold alone. */
export const NO_OPERATIONS: Operations = normaliseEntry({
  tagsAdd: [],
  tagsRemove: [],
  traitsIncrement: {},
  traitsUnset: [],
});
