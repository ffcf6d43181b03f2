import uPlot from "uplot";
import { post } from "../api.js";
import { field, h, list, showing, table } from "../dom.js";
import { cohortFilterForm, dateRangeForm } from "../filters.js";

interface Series {
  name: string;
  tag: string | null;
  points: { date: string; events: number; players: number }[];
}
/** complete_through and lag_seconds come from services that report freshness; older ones leave them out. */
interface TrendsAnswer {
  series: Series[];
  complete_through?: string;
  lag_seconds?: number;
}
type Metric = "events" | "players";

const COLOURS = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563"];

/** The main page: a line chart per event name, its numbers in a table and a CSV. */
export function trendsPage(root: HTMLElement): void {
  const range = dateRangeForm();
  const cohort = cohortFilterForm();
  const names = h("input", { name: "names", placeholder: "all names" });
  const metric = h(
    "select",
    { name: "metric" },
    h("option", { value: "events" }, "Events"),
    h("option", { value: "players" }, "Distinct players"),
  );
  const split = h("input", { type: "checkbox", name: "split" });
  const status = h("div", { class: "status" });
  const freshness = h("p", { class: "freshness" });
  const charts = h("div", { class: "charts" });
  const numbers = h("div", { class: "numbers" });
  const download = h("button", { type: "button", name: "csv", disabled: true }, "Download CSV");
  let answer: TrendsAnswer | undefined;

  const render = () => {
    if (!answer) return;
    const shown = metric.value as Metric;
    charts.replaceChildren(...chartsOf(answer.series, shown));
    numbers.replaceChildren(numbersTable(answer.series, shown));
    freshness.textContent = freshnessOf(answer);
  };
  const load = async () => {
    answer = await showing(status, () =>
      post<TrendsAnswer>("events/trends", {
        ...range.value(),
        interval: "day",
        ...(list(names.value).length > 0 && { names: list(names.value) }),
        ...cohort.value(),
        ...(split.checked && { split_by: "tags" }),
      }),
    );
    download.disabled = !answer;
    if (answer) render();
  };
  metric.addEventListener("change", render);
  download.addEventListener("click", () => answer && saveCsv(answer.series));

  root.replaceChildren(
    h("h1", {}, "Trends"),
    h(
      "form",
      { class: "controls", onsubmit: (event) => (event.preventDefault(), void load()) },
      range.element,
      cohort.element,
      h(
        "fieldset",
        {},
        h("legend", {}, "Show"),
        field("Event names", names),
        field("Count", metric),
        field("Split by tags", split),
      ),
      h("button", { type: "submit" }, "Apply"),
    ),
    status,
    freshness,
    charts,
    numbers,
    download,
  );
  void load();
}

function freshnessOf(answer: TrendsAnswer): string {
  if (answer.lag_seconds === undefined) return "";
  const through = answer.complete_through ? ` (complete through ${answer.complete_through})` : "";
  return `Events up to ${Math.round(answer.lag_seconds)} s ago${through}`;
}

const seriesLabel = (series: Series) => series.tag ?? "everyone";

/** One chart per event name; a line per tag when split. */
function chartsOf(all: Series[], metric: Metric): HTMLElement[] {
  const byName = new Map<string, Series[]>();
  for (const series of all) byName.set(series.name, [...(byName.get(series.name) ?? []), series]);
  return [...byName].map(([name, lines]) => {
    const element = h("section", { class: "chart", "data-name": name }, h("h2", {}, name));
    const days = lines[0].points.map((point) => Date.parse(point.date) / 1000);
    new uPlot(
      {
        width: 760,
        height: 260,
        scales: { x: { time: true } },
        // Days are UTC dates, as the API counts them.
        tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), "Etc/UTC"),
        series: [
          {},
          ...lines.map((line, i) => ({ label: seriesLabel(line), stroke: COLOURS[i % COLOURS.length], width: 2 })),
        ],
      },
      [days, ...lines.map((line) => line.points.map((point) => point[metric]))],
      element,
    );
    return element;
  });
}

/** A row per day, a column per series: the chart's numbers. */
function numbersTable(all: Series[], metric: Metric): HTMLTableElement {
  const headers = ["date", ...all.map((series) => `${series.name} · ${seriesLabel(series)}`)];
  const rows = (all[0]?.points ?? []).map((point, i) => [point.date, ...all.map((series) => series.points[i][metric])]);
  return table(headers, rows, "trends-table");
}

function saveCsv(all: Series[]): void {
  const quote = (text: string) => `"${text.replaceAll('"', '""')}"`;
  const lines = ["date,name,tag,events,players"];
  for (const series of all) {
    for (const point of series.points) {
      lines.push([point.date, quote(series.name), quote(series.tag ?? ""), point.events, point.players].join(","));
    }
  }
  const url = URL.createObjectURL(new Blob([lines.join("\n") + "\n"], { type: "text/csv" }));
  h("a", { href: url, download: "trends.csv" }).click();
  URL.revokeObjectURL(url);
}
