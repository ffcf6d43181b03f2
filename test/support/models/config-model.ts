import { createHash } from "node:crypto";

// The brute-force answer of config/evaluate, written from docs/api.md ("Config and experiments") apart from the
// service's code: a rule's cohort tested tag by tag, the bucket hashed here.

type TraitValue = string | number | boolean;

/** A rule as config/update takes it (tags already normalised: lower case, no spaces). */
export interface ModelRule {
  tags?: string[];
  tags_match?: "any" | "all";
  tags_none?: string[];
  traits?: Record<string, TraitValue>;
  rollout_percent?: number;
  value: unknown;
}

export interface ModelEntry {
  key: string;
  default_value: unknown;
  rules: ModelRule[];
  in_launch?: boolean;
}

/** A player as the rules see them: identity key, tags, traits (none without a profile). */
export interface ModelPlayer {
  identityKey: string;
  tags: readonly string[];
  traits: Readonly<Record<string, TraitValue>>;
}

/** SHA-256 of `<project>/<name>/<identity key>`, its first four bytes big-endian, modulo 10,000. */
export function modelBucket(projectId: string, name: string, identityKey: string): number {
  return createHash("sha256").update(`${projectId}/${name}/${identityKey}`).digest().readUInt32BE(0) % 10_000;
}

function inCohort(rule: Omit<ModelRule, "value" | "rollout_percent">, player: ModelPlayer): boolean {
  const tags = rule.tags ?? [];
  const tagged =
    tags.length === 0 ||
    (rule.tags_match === "all"
      ? tags.every((t) => player.tags.includes(t))
      : tags.some((t) => player.tags.includes(t)));
  const untagged = (rule.tags_none ?? []).every((t) => !player.tags.includes(t));
  const traits = Object.entries(rule.traits ?? {}).every(([key, value]) => player.traits[key] === value);
  return tagged && untagged && traits;
}

/** The first rule whose cohort holds the player and whose rollout (if any) takes their bucket, else the default. */
export function modelValue(projectId: string, entry: ModelEntry, player: ModelPlayer): unknown {
  for (const rule of entry.rules) {
    if (!inCohort(rule, player)) continue;
    if (rule.rollout_percent === undefined) return rule.value;
    if (modelBucket(projectId, entry.key, player.identityKey) < Math.round(rule.rollout_percent * 100)) {
      return rule.value;
    }
  }
  return entry.default_value;
}

export interface ModelExperiment {
  name: string;
  variants: { name: string; weight: number }[];
  tags?: string[];
  tags_match?: "any" | "all";
  tags_none?: string[];
  traits?: Record<string, TraitValue>;
}

/** Whether the player is eligible for the experiment (its cohort filter). */
export const modelEligible = (experiment: ModelExperiment, player: ModelPlayer): boolean =>
  inCohort(experiment, player);

/** The variant whose share of the 10,000 buckets (its weight over the sum, in order) holds the player's bucket. */
export function modelVariant(projectId: string, experiment: ModelExperiment, identityKey: string): string {
  const bucket = modelBucket(projectId, experiment.name, identityKey);
  const total = experiment.variants.reduce((sum, v) => sum + v.weight, 0);
  let cumulative = 0;
  for (const [i, variant] of experiment.variants.entries()) {
    cumulative += variant.weight;
    const bound = i === experiment.variants.length - 1 ? 10_000 : Math.round((cumulative / total) * 10_000);
    if (bucket < bound) return variant.name;
  }
  throw new Error("no variant");
}

/** A small deterministic generator (mulberry32), so a failing case can be run again. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
