import type { SumDays } from "../reads/sums.js";

/** Per day, events per name field (see names.ts). */
export type DayCounts = Record<string, Record<string, number>>;

/** One player's history of events, and the cohorts it is counted in. */
export interface PlayerRollup {
  identityKey: string;
  days: DayCounts;
  /** Per day and name field, the summed properties' totals in millionths (sums.ts). */
  sums: SumDays;
  /** Cohort ids ("t/<tag>", "r/<trait>") the history is counted in now. */
  cohorts: string[];
  /** Set once a device's history moved to a player. */
  foldedInto: string | null;
  /** The last queue segment this history absorbed. */
  hw: number;
}
