import type { Clock } from "../clock.js";
import type { PlayerCohorts } from "../players/rules/profile-match.js";
import { notTimed, stepsOf, type Step, type StepTimer } from "../steps.js";
import type { CompiledConfigs } from "./compiled-configs.js";
import type { Exposure, ExposureRecorder } from "./exposures.js";
import { LaunchDecisions } from "./decisions.js";
import { decide, NO_COHORTS, variantFor, type HeldValue } from "./rules/compiled.js";

/** A player as a request names them. */
export type PlayerIdentity = { partnerUserId: string } | { deviceId: string };

/** The players side as the config reads it (players.ts implements it). */
export interface PlayerFinder {
  /**
   * The player `identity` names now (a linked device's player; a folded profile's target) and their profile's
   * tags and traits, read fresh (null: no profile).
   */
  find(
    projectId: string,
    identity: PlayerIdentity,
  ): Promise<{ identityKey: string; profile: (PlayerCohorts & { version: number }) | null }>;
}

/** What a player gets: each key's value, each experiment's variant, and the project's config version decided at. */
export interface PlayerAnswer {
  config: ReadonlyMap<string, HeldValue>;
  experiments: ReadonlyMap<string, string>;
  version: number;
}

/** An answer read and decided, its exposures not yet recorded. */
export interface PreparedAnswer extends PlayerAnswer {
  /** Records the player's first exposure to each variant the answer gives; answers the variants then recorded. */
  record(): Promise<PlayerAnswer>;
}

export interface EvaluationOptions {
  compiled: CompiledConfigs;
  players: PlayerFinder;
  exposures: ExposureRecorder;
  clock: Clock;
  /** Where config/evaluate's steps are timed (`platform_step_seconds{path="evaluate"}`). */
  steps?: StepTimer;
}

const NOTHING_RECORDED: ReadonlyMap<string, string> = new Map();

/**
 * A player's config and experiments now, for a verify (`prepare` before its token is spent, `record` after) and
 * for config/evaluate: the project's compile, the player's profile read fresh, and each experiment's variant the
 * one recorded at the player's first exposure, else the one their bucket gives by the weights now.
 */
export class Evaluation {
  private readonly step: Step;
  private readonly launchDecisions = new LaunchDecisions();

  constructor(private readonly deps: EvaluationOptions) {
    this.step = stepsOf("evaluate", deps.steps ?? notTimed);
  }

  /** config/evaluate: what `identity` gets now (`keys`: these entries, else the in_launch ones), recorded when `records`. */
  async evaluate(
    projectId: string,
    identity: PlayerIdentity,
    keys: readonly string[] | undefined,
    records: boolean,
  ): Promise<PlayerAnswer> {
    const prepared = await this.step("decide", () => this.prepare(projectId, identity, keys));
    return records ? this.step("record", () => prepared.record()) : prepared;
  }

  /** Reads and decides; records nothing. A project without in_launch entries and running experiments reads no player. */
  async prepare(projectId: string, identity: PlayerIdentity, keys?: readonly string[]): Promise<PreparedAnswer> {
    const { compiled: configs, players, exposures, clock } = this.deps;
    const compiled = await configs.of(projectId);
    const version = compiled.version;
    if (!keys && compiled.launchEntries.length === 0 && compiled.running.length === 0) {
      const nothing = { config: new Map(), experiments: NOTHING_RECORDED, version };
      return { ...nothing, record: async () => nothing };
    }
    const found = await players.find(projectId, identity);
    const player = { identityKey: found.identityKey, cohorts: found.profile ?? NO_COHORTS };
    const { config, eligible } = keys
      ? decide(compiled, player, keys)
      : this.launchDecisions.of(compiled, player, found.profile?.version ?? 0);
    const recorded =
      eligible.length === 0
        ? NOTHING_RECORDED
        : await exposures.recorded(
            projectId,
            player.identityKey,
            eligible.map((experiment) => experiment.name),
          );
    const experiments = new Map<string, string>();
    const unrecorded: Exposure[] = [];
    for (const experiment of eligible) {
      const variant = recorded.get(experiment.name) ?? variantFor(compiled, experiment, player.identityKey);
      experiments.set(experiment.name, variant);
      if (!recorded.has(experiment.name)) unrecorded.push({ experiment: experiment.name, variant });
    }
    const answer = { config, experiments, version };
    return {
      ...answer,
      async record() {
        if (unrecorded.length === 0) return answer;
        const first = await exposures.record(projectId, player.identityKey, unrecorded, clock.now());
        return { ...answer, experiments: new Map([...experiments, ...first]) };
      },
    };
  }
}
