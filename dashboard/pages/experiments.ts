import { apiKey, post } from "../api.js";
import { field, h, pageControls, readerNote, select, showing, table } from "../dom.js";
import { cohortFilterForm, type CohortFilter } from "../filters.js";
import { requestView } from "../view.js";
import { experimentResults } from "./experiment-results.js";

interface Variant {
  name: string;
  weight: number;
}
interface Experiment extends CohortFilter {
  name: string;
  variants: Variant[];
  control: string;
  state: "draft" | "running" | "stopped";
  updated_at: string;
}
interface ExperimentsAnswer {
  experiments: Experiment[];
  experiments_info: { total: number; pages: number; page: number };
}

const PAGE_SIZE = 20;
const STATES: [string, string][] = [
  ["draft", "draft (nobody gets it)"],
  ["running", "running"],
  ["stopped", "stopped (nobody gets it any more)"],
];

/** Who is eligible, in words: everyone, or the filter's parts. */
function eligibility({ tags = [], tags_match, tags_none = [], traits = {} }: CohortFilter): string {
  const parts = [
    tags.length > 0 && `tags (${tags_match ?? "any"}): ${tags.join(", ")}`,
    tags_none.length > 0 && `without: ${tags_none.join(", ")}`,
    ...Object.entries(traits).map(([key, value]) => `${key} = ${JSON.stringify(value)}`),
  ].filter(Boolean);
  return parts.length > 0 ? parts.join("; ") : "everyone";
}

/** An experiment's variants and weights, eligibility and state; a new one when `experiment` is null. */
function experimentEditor(experiment: Experiment | null, done: () => void): HTMLFormElement {
  const name = h("input", { name: "name", required: true, value: experiment?.name, readonly: experiment !== null });
  const rows = h("div", { class: "variants" });
  const addVariant = (variant: Partial<Variant>) => {
    const row = h(
      "div",
      { class: "variant" },
      field("Variant", h("input", { name: "variant-name", required: true, value: variant.name })),
      field("Weight", h("input", { type: "number", name: "weight", min: 0, step: "any", value: variant.weight ?? 1 })),
      h("button", { type: "button", name: "remove-variant", onclick: () => row.remove() }, "Remove"),
    );
    rows.append(row);
  };
  (experiment?.variants ?? [{ name: "control" }, { name: "treatment" }]).forEach(addVariant);
  const control = h("input", { name: "control", placeholder: "the first variant", value: experiment?.control });
  const cohort = cohortFilterForm(experiment ?? {});
  const state = select("state", STATES);
  state.value = experiment?.state ?? "draft";
  const status = h("div", { class: "status" });
  const variants = () =>
    [...rows.querySelectorAll(".variant")].map((row) => ({
      name: (row.querySelector('[name="variant-name"]') as HTMLInputElement).value,
      weight: Number((row.querySelector('[name="weight"]') as HTMLInputElement).value),
    }));
  const save = () =>
    showing(status, async () => {
      const body = {
        name: name.value,
        variants: variants(),
        control: control.value,
        ...cohort.value(),
        state: state.value,
      };
      await post("experiments/update", body);
      done();
    });
  return h(
    "form",
    { class: "experiment-editor", onsubmit: (event) => (event.preventDefault(), void save()) },
    h("h2", {}, experiment ? `Edit ${experiment.name}` : "New experiment"),
    field("Name", name),
    rows,
    h("button", { type: "button", name: "add-variant", onclick: () => addVariant({ weight: 1 }) }, "Add variant"),
    field("Control", control),
    h("p", { class: "note" }, "Eligible: the players of this cohort (as of now); empty, everyone."),
    cohort.element,
    field("State", state),
    h("button", { type: "submit" }, "Save"),
    status,
  );
}

/**
 * The project's experiments (experiments/list): variants and weights, eligibility, state; with the private key each
 * is created, edited, run and stopped. A player's variant is in every verify and config/evaluate answer.
 */
export function experimentsPage(root: HTMLElement): void {
  const view = requestView(null, "No experiments yet: New experiment (or experiments/update with the private key).");
  const pager = h("p", { class: "pager" });
  const panel = h("div", { class: "panel" });
  const status = h("div", { class: "status" });
  const canEdit = apiKey.type() !== "reader";
  let page = 1;
  const reload = () => {
    panel.replaceChildren();
    void load();
  };
  const setState = (name: string, state: string) =>
    showing(status, () => post("experiments/update", { name, state }).then(reload));
  const actions = (experiment: Experiment) => {
    const results = h(
      "button",
      {
        type: "button",
        class: "results",
        "data-name": experiment.name,
        onclick: () => panel.replaceChildren(experimentResults(experiment.name)),
      },
      "Results",
    );
    if (!canEdit) return results;
    const next = experiment.state === "running" ? "stopped" : "running";
    return h(
      "span",
      { class: "actions" },
      results,
      h(
        "button",
        {
          type: "button",
          class: "edit",
          "data-name": experiment.name,
          onclick: () => panel.replaceChildren(experimentEditor(experiment, reload)),
        },
        "Edit",
      ),
      h(
        "button",
        {
          type: "button",
          class: next === "running" ? "run" : "stop",
          "data-name": experiment.name,
          onclick: () => void setState(experiment.name, next),
        },
        next === "running" ? "Run" : "Stop",
      ),
    );
  };
  const load = () =>
    view.run(
      (signal) => post<ExperimentsAnswer>("experiments/list", { page, page_size: PAGE_SIZE }, signal),
      (answer) => {
        pager.replaceChildren(
          ...pageControls(answer.experiments_info, "experiments", (next) => ((page = next), void load())),
        );
        if (answer.experiments.length === 0) return null;
        return [
          table(
            ["name", "state", "variants (weight)", "control", "eligible", "updated", ""],
            answer.experiments.map((experiment) => [
              experiment.name,
              experiment.state,
              experiment.variants.map((v) => `${v.name} (${v.weight})`).join(", "),
              experiment.control,
              eligibility(experiment),
              experiment.updated_at,
              actions(experiment),
            ]),
            "experiments-table",
          ),
        ];
      },
    );
  const newExperiment = canEdit
    ? h(
        "button",
        {
          type: "button",
          name: "new-experiment",
          onclick: () => panel.replaceChildren(experimentEditor(null, reload)),
        },
        "New experiment",
      )
    : "";
  root.replaceChildren(
    h("h1", {}, "Experiments"),
    h(
      "p",
      {},
      "Players split among variants by a fixed bucket of their id; once a verify (or an evaluation with the private key) answers a player's variant, the player keeps it.",
    ),
    readerNote("Changing an experiment"),
    newExperiment,
    panel,
    status,
    view.status,
    view.content,
    pager,
  );
  void load();
}
