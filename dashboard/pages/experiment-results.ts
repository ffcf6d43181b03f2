import { post } from "../api.js";
import { field, formatNumber, h, select, table } from "../dom.js";
import { requestView } from "../view.js";

interface VariantResult {
  variant: string;
  exposed: number;
  measured: number;
  value: number | null;
  difference: number | null;
  ci_low: number | null;
  ci_high: number | null;
  p_value: number | null;
}
interface ResultsAnswer {
  control: string;
  variants: VariantResult[];
  sample_ratio: { p_value: number; warning: boolean };
}

const KINDS: [string, string][] = [
  ["return", "return on day N after the exposure"],
  ["event", "an event within N days"],
  ["sum", "a summed property per player within N days"],
];

/** A result's figure: four decimals, or a dash where the data give none. */
const figure = (value: number | null): string => (value === null ? "–" : formatNumber(value, 4));

/**
 * An experiment's results (experiments/results) for a metric chosen on the form: per variant its exposed and
 * measured players, the value, the difference from the control with its 95 % interval and p-value, and the warning
 * when the exposures depart from the weights.
 */
export function experimentResults(name: string): HTMLElement {
  const kind = select("metric-kind", KINDS);
  const days = h("input", { type: "number", name: "metric-days", min: 1, max: 90, value: 1, required: true });
  const event = h("input", { name: "metric-name", placeholder: "event and sum" });
  const property = h("input", { name: "metric-property", placeholder: "sum" });
  const form = h(
    "form",
    { class: "results-form", onsubmit: (e) => (e.preventDefault(), void load()) },
    field("Metric", kind),
    field("Days (N)", days),
    field("Event name", event),
    field("Summed property", property),
    h("button", { type: "submit" }, "Show results"),
  );
  const view = requestView(form, "No variants.");
  const load = () =>
    view.run(
      (signal) =>
        post<ResultsAnswer>(
          "experiments/results",
          {
            name,
            metric: { kind: kind.value, days: Number(days.value), name: event.value, property: property.value },
          },
          signal,
        ),
      (answer) => {
        const ratio = answer.sample_ratio;
        return [
          table(
            ["variant", "exposed", "measured", "value", "difference", "95 % interval", "p-value"],
            answer.variants.map((one) => [
              one.variant === answer.control ? `${one.variant} (control)` : one.variant,
              one.exposed,
              one.measured,
              figure(one.value),
              figure(one.difference),
              one.ci_low === null ? "–" : `${figure(one.ci_low)} to ${figure(one.ci_high)}`,
              figure(one.p_value),
            ]),
            "results-table",
          ),
          h(
            "p",
            { class: ratio.warning ? "sample-ratio warning" : "sample-ratio" },
            ratio.warning
              ? `Sample ratio mismatch: the exposures depart from the weights (p = ${figure(ratio.p_value)}); the results may be biased.`
              : `Exposures follow the weights (sample ratio p = ${figure(ratio.p_value)}).`,
          ),
        ];
      },
    );
  return h(
    "section",
    { class: "experiment-results" },
    h("h2", {}, `Results of ${name}`),
    form,
    view.status,
    view.content,
  );
}
