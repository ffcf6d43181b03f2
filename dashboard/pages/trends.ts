import { post } from "../api.js";
import { lineChart } from "../chart.js";
import { field, h, list, select, table } from "../dom.js";
import { cohortFilterForm, dateRangeForm } from "../filters.js";
import type { TrendsAnswer } from "../kpis.js";
import { filterForm } from "../url-state.js";
import { NO_EVENTS, requestView } from "../view.js";

type Series = TrendsAnswer["series"][number];
type Metric = "events" | "players" | "sum";

/** Chosen event names on one chart (or one each), by day, week or month; the numbers in a table and a CSV. */
export function trendsPage(root: HTMLElement): void {
  const range = dateRangeForm(30);
  const cohort = cohortFilterForm();
  const names = h("input", { name: "names", placeholder: "all names" });
  const metric = select("metric", [
    ["events", "Events"],
    ["players", "Distinct players"],
    ["sum", "Sum of a property"],
  ]);
  const sum = h("input", { name: "sum", placeholder: "amount" });
  const interval = select("interval", [
    ["day", "Day"],
    ["week", "Week"],
    ["month", "Month"],
  ]);
  const layout = select("layout", [
    ["one", "One chart"],
    ["each", "A chart per name"],
  ]);
  const split = h("input", { type: "checkbox", name: "split" });
  const form = filterForm(
    () => void load(),
    range.element,
    cohort.element,
    h(
      "fieldset",
      {},
      h("legend", {}, "Show"),
      field("Event names", names),
      field("Count", metric),
      field("Summed property", sum),
      field("Interval", interval),
      field("Charts", layout),
      field("Split by tags", split),
    ),
  );
  const view = requestView(form, NO_EVENTS);

  const load = () =>
    view.run(
      (signal) =>
        Promise.all([
          post<TrendsAnswer>(
            "events/trends",
            {
              ...range.value(),
              interval: interval.value,
              ...(list(names.value).length > 0 && { names: list(names.value) }),
              ...cohort.value(),
              ...(split.checked && { split_by: "tags" }),
              ...(metric.value === "sum" && { sum: sum.value }),
            },
            signal,
          ),
          split.checked ? tagLabels(signal) : new Map<string, string>(),
        ]),
      ([answer, labels]) => {
        const shown = metric.value as Metric;
        const series =
          shown === "sum" ? answer.series.filter((s) => s.points.some((p) => p.sum != null)) : answer.series;
        if (!series.some((s) => s.points.some((p) => p.events > 0))) return null;
        const yLabel = shown === "sum" ? `sum of ${sum.value}` : shown === "players" ? "distinct players" : "events";
        return [
          h("p", { class: "freshness" }, freshnessOf(answer)),
          ...charts(series, shown, yLabel, layout.value === "one", labels),
          h("div", { class: "scroll" }, numbersTable(series, shown)),
          h("button", { type: "button", name: "csv", onclick: () => saveCsv(series) }, "Download CSV"),
        ];
      },
    );

  root.replaceChildren(h("h1", {}, "Trends"), form, view.status, view.content);
  void load();
}

function freshnessOf(answer: TrendsAnswer): string {
  if (answer.lag_seconds === undefined) return "";
  const through = answer.complete_through ? ` (complete through ${answer.complete_through})` : "";
  return `Events up to ${Math.round(answer.lag_seconds)} s ago${through}`;
}

const tagOf = (series: Series) => series.tag ?? "everyone";

/** Each tag's label (the legend shows it), from the first 100 tags by players. */
async function tagLabels(signal: AbortSignal): Promise<Map<string, string>> {
  const answer = await post<{ tags: { tag: string; label: string }[] }>(
    "players/tags",
    { page: 1, page_size: 100 },
    signal,
  );
  return new Map(answer.tags.map((record) => [record.tag, record.label]));
}
const valueOf = (point: Series["points"][number], metric: Metric) =>
  metric === "sum" ? (point.sum ?? null) : point[metric];

/** One chart with a line per series, or a chart per event name with a line per tag. */
function charts(
  all: Series[],
  metric: Metric,
  yLabel: string,
  together: boolean,
  labels: Map<string, string>,
): HTMLElement[] {
  const labelOf = (series: Series) => (series.tag === null ? "everyone" : (labels.get(series.tag) ?? series.tag));
  const dates = all[0].points.map((point) => point.date);
  const groups = new Map<string, Series[]>();
  for (const series of all) {
    const key = together ? "" : series.name;
    groups.set(key, [...(groups.get(key) ?? []), series]);
  }
  return [...groups].map(([name, lines]) =>
    h(
      "section",
      { class: "chart", "data-name": name },
      name && h("h2", {}, name),
      lineChart(
        dates,
        lines.map((line) => ({
          label: together ? `${line.name} · ${labelOf(line)}` : labelOf(line),
          values: line.points.map((point) => valueOf(point, metric)),
        })),
        yLabel,
      ),
    ),
  );
}

/** A row per bucket, a column per series: the chart's numbers. */
function numbersTable(all: Series[], metric: Metric): HTMLTableElement {
  const headers = ["date", ...all.map((series) => `${series.name} · ${tagOf(series)}`)];
  const rows = all[0].points.map((point, i) => [point.date, ...all.map((series) => valueOf(series.points[i], metric))]);
  return table(headers, rows, "trends-table");
}

function saveCsv(all: Series[]): void {
  const quote = (text: string) => `"${text.replaceAll('"', '""')}"`;
  const lines = ["date,name,tag,events,players,sum"];
  for (const series of all)
    for (const point of series.points)
      lines.push(
        [point.date, quote(series.name), quote(series.tag ?? ""), point.events, point.players, point.sum ?? ""].join(
          ",",
        ),
      );
  const url = URL.createObjectURL(new Blob([lines.join("\n") + "\n"], { type: "text/csv" }));
  h("a", { href: url, download: "trends.csv" }).click();
  URL.revokeObjectURL(url);
}
