import { post } from "../api.js";
import { sparkline } from "../chart.js";
import { field, formatNumber, h } from "../dom.js";
import { cohortFilterForm, dateRangeForm, previousRange } from "../filters.js";
import {
  changeOf,
  overviewFigures,
  type ActiveAnswer,
  type Figure,
  type RetentionAnswer,
  type TrendsAnswer,
} from "../kpis.js";
import { filterForm } from "../url-state.js";
import { NO_EVENTS, requestView } from "../view.js";

interface PropertiesAnswer {
  properties: { name: string; property: string }[];
}

/** The landing page: the range's headline figures, each beside the period of the same length before it. */
export function overviewPage(root: HTMLElement): void {
  const range = dateRangeForm(14);
  const cohort = cohortFilterForm();
  const sum = h("input", { name: "sum", list: "summed-properties", placeholder: "amount" });
  const summed = h("datalist", { id: "summed-properties" });
  const form = filterForm(
    () => void load(),
    range.element,
    cohort.element,
    h("fieldset", {}, h("legend", {}, "Revenue"), field("Summed property", sum), summed),
  );
  const view = requestView(form, NO_EVENTS);

  const load = () =>
    view.run(
      async (signal) => {
        const properties = await post<PropertiesAnswer>("events/properties", {}, signal);
        const names = [...new Set(properties.properties.map((p) => p.property))];
        summed.replaceChildren(...names.map((name) => h("option", { value: name })));
        if (sum.value === "" && names.length > 0) sum.value = names[0];
        const current = range.value();
        const previous = previousRange(current);
        const both = { from: previous.from, to: current.to, ...cohort.value() };
        const [active, retention, trends] = await Promise.all([
          post<ActiveAnswer>("events/active", both, signal),
          post<RetentionAnswer>("events/retention", { ...both, periods: 30 }, signal),
          post<TrendsAnswer>("events/trends", { ...both, ...(sum.value && { sum: sum.value }) }, signal),
        ]);
        const days = `${previous.from} to ${previous.to}`;
        return {
          figures: overviewFigures(
            { from: current.from, previousFrom: previous.from },
            active,
            retention,
            trends,
            sum.value,
          ),
          days,
        };
      },
      ({ figures, days }) => {
        if (figures.every((figure) => !figure.current && !figure.previous)) return null;
        return [
          h("p", { class: "compared" }, `Each figure beside the period before (${days}).`),
          h("div", { class: "kpis" }, ...figures.map(card)),
        ];
      },
    );

  root.replaceChildren(h("h1", {}, "Overview"), form, view.status, view.content);
  void load();
}

/** Percentages to a tenth, sums to the cent, counts whole (an average to a tenth). */
function shown(figure: Figure, value: number | null): string {
  if (value === null) return "—";
  if (figure.kind === "percent") return `${value.toFixed(1)}%`;
  if (figure.kind === "amount")
    return value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  return formatNumber(value, 1);
}

function card(figure: Figure): HTMLElement {
  const change = changeOf(figure);
  const direction = change?.startsWith("+") ? "up" : change?.startsWith("−") ? "down" : "";
  return h(
    "section",
    { class: "kpi", "data-kpi": figure.key },
    h("h2", {}, figure.label),
    h("p", { class: "value" }, shown(figure, figure.current)),
    h(
      "p",
      { class: "previous" },
      `before: ${shown(figure, figure.previous)} `,
      change && h("span", { class: `change ${direction}` }, change),
    ),
    figure.daily.length > 1 && sparkline(figure.daily),
  );
}
