import type { Cohort } from "./reads/cohort-counts.js";
import type { CohortFilter, ExperimentFilter } from "./reads/query.js";
import type { FoldMove } from "./queue/segment-store.js";

/**
 * The players side as the events side reads it (implemented by players/directory.ts): a filter's cohort as a set of
 * player numbers, as of now, and the tags with the most players.
 */
export interface PlayerDirectory {
  /** The cohort of a filter: tags, traits and tags_none resolved to the players' sets. */
  cohortOf(projectId: string, filter: CohortFilter): Promise<Cohort>;
  /** The filter's experiment with its variants named (all when it names none); a 400 for one the project lacks. */
  experimentOf(projectId: string, filter: ExperimentFilter): Promise<ExperimentFilter>;
  /** The project's tags with the most players, most first, at most `limit`. */
  topTags(projectId: string, limit: number): Promise<string[]>;
}

/**
 * What the players side tells the events side (implemented by events/capability.ts): players folded into others and
 * players erased, each carried out by the apply worker of the project before the call that made it answers.
 */
export interface PlayerActivityChanges {
  fold(projectId: string, moves: readonly FoldMove[]): Promise<void>;
  erase(projectId: string, identityKeys: readonly string[]): Promise<void>;
}
