import type { Clock } from "../clock.js";
import type { Database } from "../db/database.js";
import type { Engine } from "../db/engine.js";
import type { StepTimer } from "../steps.js";
import { ConfigChanges } from "./changes.js";
import { CompiledConfigs } from "./compiled-configs.js";
import { ConfigEntries } from "./config-entries.js";
import { Evaluation, type PlayerFinder } from "./evaluation.js";
import { Experiments } from "./experiments.js";
import { StoredExposures, type ExposureRecorder } from "./exposures.js";
import { ExposureCohorts } from "./exposure-cohorts.js";
import { Results, type MetricCounter } from "./results/experiment-results.js";
import type { CohortSets } from "../players/cohorts/cohort-sets.js";
import type { PlayerNumbers } from "../sets/player-numbers.js";
import { EntryStore } from "./storage/entry-store.js";
import { ExperimentStore } from "./storage/experiment-store.js";
import { ExposureStore } from "./storage/exposure-store.js";
import { HeadStore } from "./storage/head-store.js";

export interface ConfigCapability {
  entries: ConfigEntries;
  experiments: Experiments;
  evaluation: Evaluation;
  results: Results;
}

export interface ConfigOptions {
  database: Database;
  engine: Engine;
  clock: Clock;
  /** The players as the config reads them (Players). */
  players: PlayerFinder;
  /** The experiments (createExperimentCohorts). */
  experiments: ExperimentCohorts;
  /** The events side: experiments' metrics from the activity sets. */
  metrics: MetricCounter;
  steps?: StepTimer;
}

/** The experiments and their exposures, each exposure also a member of its variant's cohort in `cohorts`. */
export interface ExperimentCohorts {
  store: ExperimentStore;
  exposures: ExposureCohorts;
}

/** The experiments' store first (the players' sets read variants from it), then the exposures, which write those sets. */
export function createExperimentStore(database: Database, engine: Engine): ExperimentStore {
  return new ExperimentStore(database.db, engine);
}

export function createExposureCohorts(options: {
  database: Database;
  engine: Engine;
  store: ExperimentStore;
  cohorts: CohortSets;
  numbers: PlayerNumbers;
}): ExperimentCohorts {
  const { database, engine, store, cohorts, numbers } = options;
  const exposureStore = new ExposureStore(database.db, engine);
  const exposures = new ExposureCohorts({
    exposures: new StoredExposures(exposureStore),
    store: exposureStore,
    experiments: store,
    cohorts,
    numbers,
  });
  return { store, exposures };
}

/**
 * Config entries and experiments ready to serve. Their collections need no index but `_id`'s: every document is
 * addressed by `<project>/...` and read by it or by the project's `_id` range.
 */
export function createConfig(options: ConfigOptions): ConfigCapability {
  const { database, engine, clock, players, experiments: cohorts, metrics, steps } = options;
  const entries = new EntryStore(database.db, engine);
  const experiments = cohorts.store;
  const heads = new HeadStore(database.db);
  const compiled = new CompiledConfigs({ entries, experiments, heads, clock, othersWrite: !engine.soleWriter });
  const changes = new ConfigChanges(heads, compiled);
  const exposures: ExposureRecorder = cohorts.exposures;
  return {
    entries: new ConfigEntries({ store: entries, changes, clock }),
    experiments: new Experiments({ store: experiments, changes, clock }),
    evaluation: new Evaluation({ compiled, players, exposures, clock, steps }),
    results: new Results({ store: experiments, exposures: cohorts.exposures, metrics, clock }),
  };
}
