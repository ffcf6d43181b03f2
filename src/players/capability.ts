import type { Clock } from "../clock.js";
import type { Database } from "../db/database.js";
import type { Engine } from "../db/engine.js";
import type { PlayerActivityChanges } from "../events/player-directory.js";
import type { Logger } from "../log.js";
import { bitmapCodec, type Sets } from "../sets/capability.js";
import type { StepTimer } from "../steps.js";
import { CohortSets, type ExperimentVariants } from "./cohorts/cohort-sets.js";
import type { ErasedExposures } from "./rounds/erasure-finish.js";
import { seenCodec, TagSeen } from "./cohorts/tag-seen.js";
import { columnCodec, TraitColumns } from "./cohorts/trait-columns.js";
import { Players } from "./players.js";
import { repairSets } from "./rounds/cohort-sync.js";
import { Registration } from "./rounds/registration.js";
import { repairRegistryCounters } from "./storage/counter-repair.js";
import { createPlayerIndexes, createPlayerStores } from "./storage/stores.js";

/**
 * Rounds younger than this may still be running on another instance (MongoDB only: one instance owns an embedded
 * FerretDB), so a start leaves their intents alone.
 */
const REPAIR_GRACE_MS = 5 * 60_000;

/**
 * A round waits for its players' locks at most this many database deadlines: room for a hot player's queue of
 * calls (a few operations a round), while a call stuck behind an overloaded database answers 503, having written
 * nothing, instead of waiting without end and writing after its client gave up.
 */
const LOCK_WAITS = 10;

/** The players' sets: tags, profiles, traits' columns and experiments' variants (their names read from `experiments`). */
export function createCohortSets(sets: Sets, experiments: ExperimentVariants): CohortSets {
  return new CohortSets(
    sets.chunks("player_sets", bitmapCodec),
    new TraitColumns(sets.chunks("player_trait_columns", columnCodec)),
    sets.numbers,
    experiments,
  );
}

/**
 * Players ready to serve: indexes made, the sets of rounds a crash cut short made to follow their profiles again,
 * registry counters set to their records if a failed registration left them high.
 */
export async function createPlayers(options: {
  database: Database;
  engine: Engine;
  sets: Sets;
  clock: Clock;
  log?: Logger;
  activity?: PlayerActivityChanges;
  /** The players' sets (createCohortSets), which the experiments' exposures write too. */
  cohorts: CohortSets;
  exposures?: ErasedExposures;
  steps?: StepTimer;
}): Promise<Players> {
  const { database, engine, sets, clock, log, cohorts } = options;
  const stores = createPlayerStores(database.db, engine, sets.cache);
  await createPlayerIndexes(stores, engine);
  // The sole writer has no other instance mid-write: every intent it finds is a round a crash cut short.
  const before = new Date(clock.now().getTime() - (engine.soleWriter ? 0 : REPAIR_GRACE_MS));
  const repaired = await repairSets(stores, cohorts, before);
  if (repaired > 0) log?.info({ rounds: repaired }, "players' sets repaired after a crash");
  await repairRegistryCounters({ stores, lower: engine.soleWriter, log });
  const registration = new Registration(stores);
  return new Players({
    stores,
    cohorts,
    numbers: sets.numbers,
    registration,
    seen: new TagSeen(sets.chunks("player_tag_seen", seenCodec), registration),
    activity: options.activity,
    exposures: options.exposures,
    clock,
    steps: options.steps,
    log,
    lockWaitLimitMs: LOCK_WAITS * database.timeoutMs,
  });
}
