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
import { EntryStore } from "./storage/entry-store.js";
import { ExperimentStore } from "./storage/experiment-store.js";
import { ExposureStore } from "./storage/exposure-store.js";
import { HeadStore } from "./storage/head-store.js";

export interface ConfigCapability {
  entries: ConfigEntries;
  experiments: Experiments;
  evaluation: Evaluation;
}

export interface ConfigOptions {
  database: Database;
  engine: Engine;
  clock: Clock;
  /** The players as the config reads them (Players). */
  players: PlayerFinder;
  steps?: StepTimer;
}

/**
 * Config entries and experiments ready to serve. Their collections need no index but `_id`'s: every document is
 * addressed by `<project>/...` and read by it or by the project's `_id` range.
 */
export function createConfig({ database, engine, clock, players, steps }: ConfigOptions): ConfigCapability {
  const entries = new EntryStore(database.db, engine);
  const experiments = new ExperimentStore(database.db, engine);
  const heads = new HeadStore(database.db);
  const compiled = new CompiledConfigs({ entries, experiments, heads, clock, othersWrite: !engine.soleWriter });
  const changes = new ConfigChanges(heads, compiled);
  const exposures: ExposureRecorder = new StoredExposures(new ExposureStore(database.db, engine));
  return {
    entries: new ConfigEntries({ store: entries, changes, clock }),
    experiments: new Experiments({ store: experiments, changes, clock }),
    evaluation: new Evaluation({ compiled, players, exposures, clock, steps }),
  };
}
