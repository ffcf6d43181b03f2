import type { CohortDays } from "../rollups/cohort-rollup-store.js";
import { addGroups } from "./cohort-groups.js";
import type { CohortActivity } from "./player-activity.js";
import { bucketsOf, type Interval } from "./periods.js";

/** Per cohort, per bucket (its date) and name field: its counts; and each day's bucket date. */
export interface Buckets {
  dates: string[];
  dateOf: ReadonlyMap<string, string>;
  counts: CohortDays[];
}

/**
 * Per cohort of `activity`, per bucket (its date) and name field: events, and distinct players with one in the
 * bucket (not a sum of days). Days out of `days` or before `firstDay` (the retention window) count nothing. Each
 * player is read once, its cells added to its group's, and each group's to its cohorts'.
 */
export function bucketCounts(
  activity: CohortActivity,
  days: readonly string[],
  interval: Interval,
  firstDay: string,
): Buckets {
  const { dates, dateOf } = bucketsOf(days, interval);
  const bucketIndex = new Map(dates.map((date, i) => [date, i]));
  const fields: string[] = [];
  const fieldIndex = new Map<string, number>();
  // Per slot: its bucket × fields + its field, or -1.
  const slotCell = new Int32Array(activity.pairs.length).fill(-1);
  const slotBucket = new Int32Array(activity.pairs.length).fill(-1);
  activity.pairs.forEach(({ day, field }, slot) => {
    const date = day >= firstDay ? dateOf.get(day) : undefined;
    if (date === undefined) return;
    if (!fieldIndex.has(field)) fieldIndex.set(field, fields.push(field) - 1);
    slotBucket[slot] = bucketIndex.get(date)!;
    slotCell[slot] = fieldIndex.get(field)!;
  });
  const cells = dates.length * fields.length;
  const stamp = new Int32Array(cells).fill(-1);
  // A player's cells (each once) with its events in each: reused for every player.
  const touched = new Int32Array(cells);
  const playerEvents = new Float64Array(cells);
  const { groups, groupOf, ranges } = activity;
  const { slots, counts: slotEvents } = activity.columns;
  // Per group of players of the same cohorts, then added to each of them.
  const groupEvents = new Float64Array(groups.length * cells);
  const groupPlayers = new Float64Array(groups.length * cells);
  // Plain loops over the packed columns: a player's figures stay in registers (this runs once per player).
  for (let player = 0; player < activity.rows; player++) {
    const slotEnd = ranges[4 * player + 3];
    let count = 0;
    for (let i = ranges[4 * player + 2]; i < slotEnd; i++) {
      const bucket = slotBucket[slots[i]];
      if (bucket < 0) continue;
      const cell = bucket * fields.length + slotCell[slots[i]];
      if (stamp[cell] !== player) {
        stamp[cell] = player;
        playerEvents[cell] = 0;
        touched[count++] = cell;
      }
      playerEvents[cell] += slotEvents[i];
    }
    const at = groupOf[player] * cells;
    for (let i = 0; i < count; i++) {
      groupEvents[at + touched[i]] += playerEvents[touched[i]];
      groupPlayers[at + touched[i]]++;
    }
  }
  const events = new Float64Array(activity.cohorts * cells);
  const players = new Float64Array(activity.cohorts * cells);
  addGroups(groups, groupEvents, cells, events);
  addGroups(groups, groupPlayers, cells, players);
  const counts = Array.from({ length: activity.cohorts }, (_, c) => {
    const cohort: CohortDays = {};
    dates.forEach((date, bucket) => {
      fields.forEach((field, f) => {
        const cell = c * cells + bucket * fields.length + f;
        if (players[cell] > 0) (cohort[date] ??= {})[field] = { e: events[cell], p: players[cell] };
      });
    });
    return cohort;
  });
  return { dates, dateOf, counts };
}

/**
 * `buckets` with the sums of each cohort's days (`byDay`, read for the summed properties) added to their buckets:
 * a sum adds across days, as events do; only players need the distinct count above.
 */
export function withSums(buckets: Buckets, byDay: readonly CohortDays[]): Buckets {
  byDay.forEach((days, i) => {
    for (const [day, fields] of Object.entries(days)) {
      const date = buckets.dateOf.get(day);
      if (date === undefined) continue;
      for (const [field, slot] of Object.entries(fields)) {
        if (!slot.s) continue;
        const bucket = ((buckets.counts[i][date] ??= {})[field] ??= { e: 0, p: 0 });
        for (const [id, total] of Object.entries(slot.s)) (bucket.s ??= {})[id] = (bucket.s[id] ?? 0) + total;
      }
    }
  });
  return buckets;
}
