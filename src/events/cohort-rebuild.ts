import { EVERYONE, type CohortRollupStore, type CohortTotals } from "./cohort-rollup-store.js";
import { monthOf } from "./days.js";
import type { EventNameStore, ProjectNames } from "./event-name-store.js";
import { nameOfField } from "./names.js";
import type { PlayerRollupStore } from "./player-rollup-store.js";

/**
 * The upgrade of a database whose cohort counts are in an older layout (packed
 * in 32 bits, some maybe wrapped; or a month's names in one document): every
 * cohort's counts are summed again from the players' histories, which each
 * cohort series is the sum of (plan.ts), and written whole, in blocks of the
 * names (registered first, should a history hold one from before the registry).
 * Run by the apply worker while no segment is half-written, so the histories
 * and the cohorts describe the same applied segments (`applied`). A crash in
 * the middle runs it again from the start: it only replaces.
 */
export async function rebuildCohortsIfLegacy(
  playerRollups: PlayerRollupStore,
  cohortRollups: CohortRollupStore,
  names: EventNameStore,
  applied: number,
): Promise<boolean> {
  if (await cohortRollups.isCurrent()) return false;
  const totals = new Map<string, CohortTotals>();
  const namesSeen = new Map<string, Set<string>>();
  await playerRollups.forEachHistory((projectId, { days, cohorts }) => {
    // A damaged history (not of the shape this code writes) adds nothing: its project's own apply fails and is set
    // aside, while a rebuild that threw would stop every project's charts.
    if (!isObject(days) || !Array.isArray(cohorts)) return;
    for (const [day, names] of Object.entries(days)) {
      if (!isObject(names)) continue;
      for (const [field, events] of Object.entries(names)) {
        if (typeof events !== "number" || !(events > 0)) continue;
        if (!namesSeen.has(projectId)) namesSeen.set(projectId, new Set());
        namesSeen.get(projectId)!.add(nameOfField(field));
        for (const cohort of [EVERYONE, ...cohorts]) {
          const month = monthOf(day);
          const key = `${projectId}\u0000${cohort}\u0000${month}`;
          let doc = totals.get(key);
          if (!doc) totals.set(key, (doc = { projectId, cohort, month, days: {} }));
          const slot = ((doc.days[day] ??= {})[field] ??= { e: 0, p: 0 });
          slot.e += events;
          slot.p += 1;
        }
      }
    }
  });
  const registered = new Map<string, ProjectNames>();
  for (const [projectId, seen] of namesSeen) registered.set(projectId, await names.include(projectId, [...seen]));
  await cohortRollups.replaceAll([...totals.values()], registered, applied);
  return true;
}

const isObject = (value: unknown): value is object => typeof value === "object" && value !== null;
