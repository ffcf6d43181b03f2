import { post } from "../api.js";
import { field, formatNumber, h, list, select } from "../dom.js";
import { cohortFilterForm, dateRangeForm } from "../filters.js";
import type { Cohort, RetentionAnswer } from "../kpis.js";
import { filterForm } from "../url-state.js";
import { NO_EVENTS, requestView } from "../view.js";

/** The cohort table as a heat map: each start day's (or week's) players and the share back in each period. */
export function retentionPage(root: HTMLElement): void {
  const range = dateRangeForm(30);
  const cohort = cohortFilterForm();
  const interval = select("interval", [
    ["day", "Day"],
    ["week", "Week"],
  ]);
  const periods = h("input", { type: "number", name: "periods", min: 1, max: 90, value: 14 });
  const mode = select("mode", [
    ["n_day", "On that period (N-day)"],
    ["unbounded", "On it or later (unbounded)"],
  ]);
  const startName = h("input", { name: "start_name", placeholder: "any event" });
  const returnName = h("input", { name: "return_name", placeholder: "any event" });
  const splitTags = h("input", { name: "split_tags", placeholder: "top 20 tags" });
  const split = h("input", { type: "checkbox", name: "split" });
  const counts = select("show", [
    ["percent", "Percent"],
    ["counts", "Players"],
  ]);
  const form = filterForm(
    () => void load(),
    range.element,
    cohort.element,
    h(
      "fieldset",
      {},
      h("legend", {}, "Cohorts"),
      field("Interval", interval),
      field("Periods", periods),
      field("Returned", mode),
      field("Start event", startName),
      field("Return event", returnName),
      field("Split by tags", split),
      field("Split tags", splitTags),
      field("Show", counts),
    ),
  );
  const view = requestView(form, NO_EVENTS);

  const load = () =>
    view.run(
      (signal) => {
        const filter = cohort.value();
        // Split by chosen tags: those are the series (the API splits by `tags` when given).
        const tags = split.checked && list(splitTags.value).length > 0 ? { tags: list(splitTags.value) } : {};
        return post<RetentionAnswer>(
          "events/retention",
          {
            ...range.value(),
            interval: interval.value,
            periods: Number(periods.value),
            mode: mode.value,
            ...(startName.value && { start_name: startName.value }),
            ...(returnName.value && { return_name: returnName.value }),
            ...filter,
            ...tags,
            ...(split.checked && { split_by: "tags" }),
          },
          signal,
        );
      },
      (answer) => {
        const anyone = answer.series.some((series) => series.cohorts.some((c) => c.players > 0));
        if (!anyone) return null;
        const unit = interval.value === "week" ? "week" : "day";
        return answer.series.map((series) =>
          h(
            "section",
            { class: "heat", "data-tag": series.tag ?? "" },
            h("h2", {}, series.tag ?? "Everyone"),
            heatMap(series.cohorts, unit, counts.value === "counts"),
          ),
        );
      },
    );

  root.replaceChildren(h("h1", {}, "Retention"), form, view.status, view.content);
  void load();
}

function heatMap(cohorts: Cohort[], unit: string, showCounts: boolean): HTMLElement {
  const periods = Math.max(0, ...cohorts.map((c) => c.returned.length));
  const header = h(
    "tr",
    {},
    h("th", {}, "cohort"),
    h("th", {}, "players"),
    ...Array.from({ length: periods }, (_, k) => h("th", {}, `${unit} ${k}`)),
  );
  const rows = cohorts.map((cohort) =>
    h(
      "tr",
      { "data-date": cohort.date },
      h("th", {}, cohort.date),
      h("td", { class: "number", "data-players": cohort.players }, cohort.players),
      ...Array.from({ length: periods }, (_, k) => cell(cohort, k, showCounts)),
    ),
  );
  return h(
    "div",
    { class: "scroll" },
    h("table", { class: "heat-map" }, h("thead", {}, header), h("tbody", {}, ...rows)),
  );
}

function cell(cohort: Cohort, k: number, showCounts: boolean): HTMLElement {
  if (k >= cohort.returned.length) return h("td", { class: "not-begun" });
  const returned = cohort.returned[k];
  const share = cohort.players === 0 ? 0 : returned / cohort.players;
  const td = h(
    "td",
    { "data-returned": returned, title: `${formatNumber(returned)} of ${formatNumber(cohort.players)} players` },
    showCounts ? formatNumber(returned) : cohort.players === 0 ? "" : `${(100 * share).toFixed(1)}%`,
  );
  // CSSOM, which the page's style-src allows (an inline style attribute it would not).
  td.style.backgroundColor = `rgba(37, 99, 235, ${(0.08 + 0.8 * share).toFixed(3)})`;
  if (share > 0.5) td.style.color = "#fff";
  return td;
}
