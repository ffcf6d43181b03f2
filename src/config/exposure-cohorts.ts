import { dayOf } from "../events/rollup-keys.js";
import { exposedSet, type CohortSets } from "../players/cohorts/cohort-sets.js";
import type { Bitmap } from "../sets/bitmap.js";
import type { PlayerNumbers } from "../sets/player-numbers.js";
import type { Exposure, ExposureRecorder, StoredExposures } from "./exposures.js";
import type { ExperimentStore } from "./storage/experiment-store.js";
import type { ExposureStore } from "./storage/exposure-store.js";

export interface ExposureCohortsOptions {
  exposures: StoredExposures;
  store: ExposureStore;
  experiments: ExperimentStore;
  cohorts: CohortSets;
  numbers: PlayerNumbers;
}

/**
 * The exposed players of each variant as a cohort (cohort-sets.ts, exposedSet): an exposure recorded also puts the
 * player's number in its variant's set and in the variant's set of that day (what results count from), before the
 * call answers; an erasure takes the player out of them and deletes the exposures. A crash between an exposure and
 * its sets leaves that player out of them.
 */
export class ExposureCohorts implements ExposureRecorder {
  constructor(private readonly deps: ExposureCohortsOptions) {}

  recorded(projectId: string, identityKey: string, experiments: readonly string[]): Promise<Map<string, string>> {
    return this.deps.exposures.recorded(projectId, identityKey, experiments);
  }

  async record(projectId: string, identityKey: string, exposures: readonly Exposure[], at: Date) {
    const { cohorts, numbers } = this.deps;
    const { variants, inserted } = await this.deps.exposures.record(projectId, identityKey, exposures, at);
    if (inserted.length > 0) {
      const number = (await numbers.assign(projectId, [identityKey])).get(identityKey)!;
      const join = inserted.flatMap(({ experiment, variant }) => [
        exposedSet(experiment, variant),
        exposedSet(experiment, variant, dayOf(at)),
      ]);
      await cohorts.write(projectId, [{ number, join, leave: [], traits: new Map() }]);
    }
    return variants;
  }

  /** Per variant, per day of `days`: the players exposed to it that day. */
  async byDay(projectId: string, experiment: string, variants: readonly string[], days: readonly string[]) {
    const names = variants.flatMap((variant) => days.map((day) => exposedSet(experiment, variant, day)));
    const sets = await this.deps.cohorts.members(projectId, names);
    return new Map<string, Map<string, Bitmap>>(
      variants.map((variant, v) => [variant, new Map(days.map((day, d) => [day, sets[v * days.length + d]]))]),
    );
  }

  /** The players of `identityKeys` out of every exposure set, and their exposures deleted (an erasure). */
  async erase(projectId: string, identityKeys: readonly string[]): Promise<void> {
    const { experiments, store, cohorts, numbers, exposures } = this.deps;
    const names = (await experiments.list(projectId)).map((record) => record.experiment.name);
    const found = await store.ofPlayers(projectId, identityKeys, names);
    const numbered = await numbers.find(projectId, identityKeys);
    const changes = found.flatMap(({ identityKey, experiment, variant, exposedAt }) => {
      const number = numbered.get(identityKey);
      const leave = [exposedSet(experiment, variant), exposedSet(experiment, variant, dayOf(exposedAt))];
      return number === undefined ? [] : [{ number, join: [], leave, traits: new Map() }];
    });
    await cohorts.write(projectId, changes);
    await store.delete(projectId, identityKeys, names);
    exposures.forget(projectId, identityKeys, names);
  }
}
