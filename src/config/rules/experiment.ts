import { InvalidArgumentError } from "../../errors.js";
import { cohortFilter, type CohortFilter } from "../../events/reads/query.js";
import { checkName, type RuleInput } from "./entry.js";

export const EXPERIMENT_STATES = ["draft", "running", "stopped"] as const;
export type ExperimentState = (typeof EXPERIMENT_STATES)[number];

export const MIN_VARIANTS = 2;
export const MAX_VARIANTS = 9;
export const MAX_RUNNING_PER_PROJECT = 20;

export interface Variant {
  name: string;
  /** Positive: the variant's share of the eligible players is its weight over the sum of the weights. */
  weight: number;
}

export interface Experiment {
  name: string;
  variants: Variant[];
  control: string;
  /** Who is eligible (empty: everyone). */
  cohort: CohortFilter;
  state: ExperimentState;
  /** Whether it was ever running: its variants' names are then fixed, and it never goes back to draft. */
  hasRun: boolean;
}

/** An update as a request sends it; no variants means "keep the experiment's own and change only its state". */
export interface ExperimentInput extends Pick<RuleInput, "tags" | "tagsMatch" | "tagsNone" | "traits"> {
  name: string;
  variants: readonly Variant[];
  control: string;
  state: ExperimentState;
}

const invalid = (message: string) => new InvalidArgumentError(message);

/** The experiment an update makes of `current` (null: none by that name yet), each refusal naming its field. */
export function decideExperiment(input: ExperimentInput, current: Experiment | null): Experiment {
  checkName("name", input.name);
  if (input.state === "draft" && current?.hasRun)
    throw invalid("state: an experiment that has run never goes back to draft");
  const hasRun = (current?.hasRun ?? false) || input.state === "running";
  if (input.variants.length === 0) {
    if (!current) throw invalid(`name: no experiment ${JSON.stringify(input.name)} (send its variants to create it)`);
    return { ...current, state: input.state, hasRun };
  }
  const variants = checkVariants(input.variants);
  if (current?.hasRun && !sameNames(variants, current.variants)) {
    throw invalid(
      `variants: the experiment has run, so its variants stay ${current.variants.map((v) => v.name).join(", ")} (their weights may change)`,
    );
  }
  const control = input.control === "" ? variants[0].name : input.control;
  if (!variants.some((variant) => variant.name === control)) {
    throw invalid(`control: ${JSON.stringify(control)} is none of the variants`);
  }
  return {
    name: input.name,
    variants,
    control,
    cohort: cohortFilter({ ...input, variants: undefined }),
    state: input.state,
    hasRun,
  };
}

function checkVariants(variants: readonly Variant[]): Variant[] {
  if (variants.length < MIN_VARIANTS || variants.length > MAX_VARIANTS) {
    throw invalid(`variants: ${MIN_VARIANTS} to ${MAX_VARIANTS}, got ${variants.length}`);
  }
  const seen = new Set<string>();
  return variants.map(({ name, weight }, i) => {
    checkName(`variants[${i}].name`, name);
    if (seen.has(name)) throw invalid(`variants[${i}].name: ${JSON.stringify(name)} is named twice`);
    seen.add(name);
    if (!(Number.isFinite(weight) && weight > 0))
      throw invalid(`variants[${i}].weight: a positive number, got ${weight}`);
    return { name, weight };
  });
}

const sameNames = (a: readonly Variant[], b: readonly Variant[]) =>
  a.length === b.length && a.every((variant) => b.some((other) => other.name === variant.name));
