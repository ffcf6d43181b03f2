import type { Cohort } from "../events/reads/cohort-counts.js";
import type { PlayerDirectory } from "../events/player-directory.js";
import type { CohortFilter, ExperimentFilter } from "../events/reads/query.js";
import type { CohortSets } from "./cohorts/cohort-sets.js";
import type { Search } from "./search.js";

/** Tags a project can have; the top-tags listing reads them all. */
const MAX_PROJECT_TAGS = 500;

/** The players as the events side reads them (its PlayerDirectory): cohorts as sets, the top tags by their sets' sizes. */
export class StoredPlayerDirectory implements PlayerDirectory {
  constructor(
    private readonly cohorts: CohortSets,
    private readonly search: Search,
  ) {}

  cohortOf(projectId: string, filter: CohortFilter): Promise<Cohort> {
    return this.cohorts.resolve(projectId, filter);
  }

  experimentOf(projectId: string, filter: ExperimentFilter): Promise<ExperimentFilter> {
    return this.cohorts.experimentOf(projectId, filter);
  }

  async topTags(projectId: string, limit: number): Promise<string[]> {
    const { tags } = await this.search.listTags(projectId, {}, 1, MAX_PROJECT_TAGS);
    return tags
      .filter((tag) => tag.playersCount > 0)
      .sort((a, b) => b.playersCount - a.playersCount || a.id - b.id)
      .slice(0, limit)
      .map((tag) => tag.tag);
  }
}
