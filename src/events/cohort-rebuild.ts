import { EVERYONE, type CohortRollupStore, type CohortTotals } from "./cohort-rollup-store.js";
import { monthOf } from "./days.js";
import type { PlayerRollupStore } from "./player-rollup-store.js";

/**
 * The upgrade of a database whose cohort counts were packed in 32 bits (some
 * may have wrapped): every cohort's counts are summed again from the players'
 * histories, which each cohort series is the sum of (plan.ts), and written
 * whole. Run by the apply worker while no segment is half-written, so the
 * histories and the cohorts describe the same applied segments (`applied`).
 * A crash in the middle runs it again from the start: it only replaces.
 */
export async function rebuildCohortsIfLegacy(
  playerRollups: PlayerRollupStore,
  cohortRollups: CohortRollupStore,
  applied: number,
): Promise<boolean> {
  if (await cohortRollups.isCurrent()) return false;
  const totals = new Map<string, CohortTotals>();
  await playerRollups.forEachHistory((projectId, { days, cohorts }) => {
    // A damaged history (not of the shape this code writes) adds nothing: its project's own apply fails and is set
    // aside, while a rebuild that threw would stop every project's charts.
    if (!isObject(days) || !Array.isArray(cohorts)) return;
    for (const [day, names] of Object.entries(days)) {
      if (!isObject(names)) continue;
      for (const [field, events] of Object.entries(names)) {
        if (typeof events !== "number" || !(events > 0)) continue;
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
  await cohortRollups.replaceAll([...totals.values()], applied);
  return true;
}

const isObject = (value: unknown): value is object => typeof value === "object" && value !== null;
