import type { Clock } from "../../clock.js";
import { InvalidArgumentError } from "../../errors.js";
import type { ExposedByDay, ExposureMetric, MetricTotals } from "../../events/kpis/exposure-metrics.js";
import { daysBetween, dayOf, parseDay } from "../../events/rollup-keys.js";
import type { ExposureCohorts } from "../exposure-cohorts.js";
import type { ExperimentStore } from "../storage/experiment-store.js";
import { compareMeans, compareShares, sampleRatioPValue, type GroupTotals } from "./statistics.js";

/** Below this p-value the exposures depart from the weights: the sample-ratio warning. */
export const SAMPLE_RATIO_ALARM = 0.001;

/** The events side as results count it (events/kpis/exposure-metrics.ts). */
export interface MetricCounter {
  totals(projectId: string, exposed: ExposedByDay, metric: ExposureMetric): Promise<Map<string, MetricTotals>>;
}

export interface VariantResult {
  variant: string;
  exposed: number;
  measured: number;
  /** A share or a mean per measured player; undefined with none measured. */
  value?: number;
  difference?: number;
  ciLow?: number;
  ciHigh?: number;
  pValue?: number;
}

export interface ExperimentResults {
  control: string;
  variants: VariantResult[];
  sampleRatio: { pValue: number; warning: boolean };
}

/**
 * experiments/results: per variant, its exposed players (the variant's sets by exposure day, from the day it first
 * ran through today) and the metric counted from each one's exposure day, compared with the control; and the
 * exposures tested against the weights as they are now.
 */
export class Results {
  constructor(
    private readonly deps: { store: ExperimentStore; exposures: ExposureCohorts; metrics: MetricCounter; clock: Clock },
  ) {}

  async of(projectId: string, name: string, metric: ExposureMetric): Promise<ExperimentResults> {
    const { store, exposures, metrics, clock } = this.deps;
    const record = await store.find(projectId, name);
    if (!record) throw new InvalidArgumentError(`name: the project has no experiment ${JSON.stringify(name)}`);
    const { variants, control } = record.experiment;
    const names = variants.map((variant) => variant.name);
    const days = record.startedAt ? daysBetween(parseDay(dayOf(record.startedAt))!, clock.now()) : [];
    const totals = await metrics.totals(projectId, await exposures.byDay(projectId, name, names, days), metric);
    const groupOf = (variant: string): GroupTotals => {
      const { measured, total, squares } = totals.get(variant)!;
      return { n: measured, total, squares };
    };
    const compare = metric.kind === "sum" ? compareMeans : compareShares;
    const pValue = sampleRatioPValue(
      names.map((variant) => totals.get(variant)!.exposed),
      variants.map((variant) => variant.weight),
    );
    return {
      control,
      variants: names.map((variant) => {
        const { exposed, measured, total } = totals.get(variant)!;
        const result: VariantResult = { variant, exposed, measured };
        if (measured > 0) result.value = total / measured;
        if (variant !== control) Object.assign(result, compare(groupOf(control), groupOf(variant)));
        return result;
      }),
      sampleRatio: { pValue, warning: pValue < SAMPLE_RATIO_ALARM },
    };
  }
}
