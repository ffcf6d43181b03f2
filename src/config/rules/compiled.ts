import type { PlayerCohorts } from "../../players/rules/profile-match.js";
import { profileMatcher, profileQueryOf } from "../../players/rules/profile-match.js";
import { BUCKETS, bucketOf } from "./bucket.js";
import type { ConfigEntry, Json } from "./entry.js";
import type { Experiment } from "./experiment.js";

/** A value as a compiled project holds it: one object per value, so what an answer makes of it can be kept beside it. */
export interface HeldValue {
  readonly json: Json;
}

/** Who the config is decided for: their identity key (the rollouts' and assignments' bucket) and cohorts now. */
export interface ConfigPlayer {
  identityKey: string;
  /** Their profile's tags and traits; none without a profile. */
  cohorts: PlayerCohorts;
}

export const NO_COHORTS: PlayerCohorts = { tags: [], traits: new Map() };

interface CompiledRule {
  inCohort: (player: PlayerCohorts) => boolean;
  /** Buckets below this are in the rollout; null: the whole cohort. */
  rolloutBuckets: number | null;
  value: HeldValue;
}

export interface CompiledEntry {
  key: string;
  inLaunch: boolean;
  defaultValue: HeldValue;
  rules: readonly CompiledRule[];
}

export interface CompiledExperiment {
  name: string;
  eligible: (player: PlayerCohorts) => boolean;
  variants: readonly string[];
  /** A player whose bucket is below bounds[i] (and not below bounds[i - 1]) gets variants[i]; the last is BUCKETS. */
  bounds: readonly number[];
}

/** A project's entries and running experiments, compiled once per version for every verify and evaluation. */
export interface CompiledConfig {
  projectId: string;
  /** The project's config version (every change of an entry or an experiment makes a new one). */
  version: number;
  entries: ReadonlyMap<string, CompiledEntry>;
  launchEntries: readonly CompiledEntry[];
  running: readonly CompiledExperiment[];
}

/** What a player gets now: each key's value, and the running experiments they are eligible for. */
export interface Decision {
  config: Map<string, HeldValue>;
  /** Each gets the player's recorded variant, else variantFor's. */
  eligible: CompiledExperiment[];
}

export function compileConfig(
  projectId: string,
  version: number,
  entries: readonly ConfigEntry[],
  experiments: readonly Experiment[],
): CompiledConfig {
  const compiled = entries.map(compileEntry);
  return {
    projectId,
    version,
    entries: new Map(compiled.map((entry) => [entry.key, entry])),
    launchEntries: compiled.filter((entry) => entry.inLaunch),
    running: experiments.filter((experiment) => experiment.state === "running").map(compileExperiment),
  };
}

/** One change of a project's config: an entry set (null: deleted), or an experiment set. */
export type ConfigChange = { key: string; entry: ConfigEntry | null } | { experiment: Experiment };

/** `config` with `change` made, at `version`: only what changed is compiled again. */
export function changedConfig(config: CompiledConfig, version: number, change: ConfigChange): CompiledConfig {
  if ("experiment" in change) {
    const { experiment } = change;
    const others = config.running.filter((running) => running.name !== experiment.name);
    const running = experiment.state === "running" ? [...others, compileExperiment(experiment)] : others;
    return { ...config, version, running: running.sort((a, b) => byName(a.name, b.name)) };
  }
  const entries = new Map(config.entries);
  if (change.entry) entries.set(change.key, compileEntry(change.entry));
  else entries.delete(change.key);
  const launchEntries = [...entries.values()].filter((entry) => entry.inLaunch).sort((a, b) => byName(a.key, b.key));
  return { ...config, version, entries, launchEntries };
}

/** Keys and names in the order of their documents' ids (letters, digits and `_ - . :`: code units are code points). */
const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function compileEntry({ key, inLaunch, defaultValue, rules }: ConfigEntry): CompiledEntry {
  return {
    key,
    inLaunch,
    defaultValue: { json: defaultValue },
    rules: rules.map((rule) => ({
      inCohort: profileMatcher(profileQueryOf(rule.cohort)),
      rolloutBuckets: rule.rolloutPercent === null ? null : Math.round(rule.rolloutPercent * 100),
      value: { json: rule.value },
    })),
  };
}

function compileExperiment({ name, variants, cohort }: Experiment): CompiledExperiment {
  const total = variants.reduce((sum, variant) => sum + variant.weight, 0);
  let cumulative = 0;
  const bounds = variants.map((variant, i) => {
    cumulative += variant.weight;
    return i === variants.length - 1 ? BUCKETS : Math.round((cumulative / total) * BUCKETS);
  });
  return { name, eligible: profileMatcher(profileQueryOf(cohort)), variants: variants.map((v) => v.name), bounds };
}

/**
 * The first rule the player matches decides (in its cohort, and within its rollout when it has one), else the
 * default. The bucket is hashed only when a rollout asks for it, once per key.
 */
export function valueFor(config: CompiledConfig, entry: CompiledEntry, player: ConfigPlayer): HeldValue {
  let bucket = -1;
  for (const rule of entry.rules) {
    if (!rule.inCohort(player.cohorts)) continue;
    if (rule.rolloutBuckets === null) return rule.value;
    if (bucket < 0) bucket = bucketOf(config.projectId, entry.key, player.identityKey);
    if (bucket < rule.rolloutBuckets) return rule.value;
  }
  return entry.defaultValue;
}

/** The variant the player's bucket for the experiment's name falls in, by the weights now. */
export function variantFor(config: CompiledConfig, experiment: CompiledExperiment, identityKey: string): string {
  const bucket = bucketOf(config.projectId, experiment.name, identityKey);
  const index = experiment.bounds.findIndex((bound) => bucket < bound);
  return experiment.variants[index];
}

/**
 * What the player gets by the config now: the values of `keys` (those the project has; the in_launch entries when
 * absent), and the running experiments they are eligible for.
 */
export function decide(config: CompiledConfig, player: ConfigPlayer, keys?: readonly string[]): Decision {
  const entries = keys ? keys.flatMap((key) => config.entries.get(key) ?? []) : config.launchEntries;
  const values = new Map<string, HeldValue>();
  for (const entry of entries) values.set(entry.key, valueFor(config, entry, player));
  return { config: values, eligible: config.running.filter((experiment) => experiment.eligible(player.cohorts)) };
}
