import { InvalidArgumentError } from "../../errors.js";
import type { SummedProperty } from "../rollups/summed-property-store.js";

/** Summed properties a project may have at once. */
export const MAX_SUMMED_PROPERTIES = 20;

/**
 * Sums are kept in millionths, as integers (BSON Int64): a decimal with at most 6 places is added exactly however
 * many are added (0.1 ten times is 1, not 0.9999999999999999), and a total is exact while its magnitude stays
 * under 2^53 millionths (about 9 × 10^9). A value is rounded to the nearest millionth.
 */
export const SUM_SCALE = 1_000_000;

/** A value at or beyond this magnitude adds 0, as a non-number does: one such event would spoil every total. */
export const MAX_SUMMED_VALUE = 1_000_000_000;

/** Per day, per name field, per summed property id: the total in millionths. */
export type SumDays = Record<string, Record<string, Record<string, number>>>;

/** The millionths an event adds to a sum of `property`: 0 without it, for a non-number, or one out of range. */
export function millionthsOf(properties: string | null, property: string): number {
  if (properties === null) return 0;
  const value = (JSON.parse(properties) as Record<string, unknown>)[property];
  if (typeof value !== "number" || !Number.isFinite(value) || Math.abs(value) >= MAX_SUMMED_VALUE) return 0;
  return Math.round(value * SUM_SCALE);
}

/** A total in millionths as the number the API answers (the double nearest the exact decimal). */
export const fromMillionths = (millionths: number): number => millionths / SUM_SCALE;

/** Adds `by` to `sums[day][field][id]`. */
export function addSum(sums: SumDays, day: string, field: string, id: string, by: number): void {
  const ofField = ((sums[day] ??= {})[field] ??= {});
  ofField[id] = (ofField[id] ?? 0) + by;
}

/** The list with `name`'s `property` summed (unchanged, null, when it is); over the limit, 400 naming `sum`. */
export function withSummed(pairs: readonly SummedProperty[], nextId: number, name: string, property: string) {
  if (pairs.some((pair) => pair.name === name && pair.property === property)) return null;
  if (pairs.length >= MAX_SUMMED_PROPERTIES) {
    throw new InvalidArgumentError(
      `sum: the project sums ${pairs.length} properties, the limit (${MAX_SUMMED_PROPERTIES}); stop summing one first`,
    );
  }
  return [...pairs, { id: String(nextId), name, property, from: null, ready: false }];
}

/** The list without `name`'s `property` (null when it is not summed). */
export function withoutSummed(pairs: readonly SummedProperty[], name: string, property: string) {
  const kept = pairs.filter((pair) => pair.name !== name || pair.property !== property);
  return kept.length === pairs.length ? null : kept;
}

/**
 * The sum id of each name a trends read shows with `property` summed: among `names` (every summed name when none
 * are asked), the ready ones. None is a 400 naming `sum`.
 */
export function sumIdsOf(pairs: readonly SummedProperty[], property: string, names: readonly string[] | undefined) {
  const ids = new Map<string, string>();
  for (const pair of pairs) {
    if (pair.ready && pair.property === property && (!names || names.includes(pair.name))) ids.set(pair.name, pair.id);
  }
  if (ids.size === 0) {
    throw new InvalidArgumentError(
      `sum: ${JSON.stringify(property)} is summed for none of the names asked (events/properties/update turns a sum on)`,
    );
  }
  return ids;
}

/** Adds `sums` (of one day and name: millionths by id), those of `ids`, times `sign`, to a chart's slot. */
export function addToSlot(
  slot: { s?: Record<string, number> },
  sums: Readonly<Record<string, number>> | undefined,
  ids: ReadonlySet<string>,
  sign = 1,
): void {
  for (const [id, by] of Object.entries(sums ?? {})) {
    if (ids.has(id)) (slot.s ??= {})[id] = (slot.s?.[id] ?? 0) + sign * by;
  }
}
