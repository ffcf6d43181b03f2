/** Per day, events per name field (see names.ts). */
export type DayCounts = Record<string, Record<string, number>>;

/** One player's history of events, and the cohorts it is counted in. */
export interface PlayerRollup {
  identityKey: string;
  days: DayCounts;
  /** Cohort ids ("t/<tag>", "r/<trait>") the history is counted in now. */
  cohorts: string[];
  /** Set once a device's history moved to a player. */
  foldedInto: string | null;
  /** The last queue segment this history absorbed. */
  hw: number;
}
