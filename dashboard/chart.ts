import uPlot from "uplot";
import { formatNumber, h } from "./dom.js";

/**
 * 20 colours that stay apart from each other (Sasha Trubetskoy's list, without white and near-black), so a chart
 * split by the top 20 tags gives each its own.
 */
export const PALETTE = [
  "#e6194b",
  "#3cb44b",
  "#4363d8",
  "#f58231",
  "#911eb4",
  "#42d4f4",
  "#f032e6",
  "#9a6324",
  "#469990",
  "#800000",
  "#808000",
  "#000075",
  "#bfef45",
  "#ffe119",
  "#dcbeff",
  "#aaffc3",
  "#fabed4",
  "#ffd8b1",
  "#a9a9a9",
  "#fffac8",
];

export interface Line {
  label: string;
  values: (number | null)[];
}

const DAY_S = 86_400;
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const dayLabel = (seconds: number) => {
  const date = new Date(seconds * 1000);
  return `${MONTHS[date.getUTCMonth()]} ${date.getUTCDate()}`;
};

/**
 * A line chart over UTC dates (`YYYY-MM-DD`, as the API answers them): ticks on whole days, weeks or months,
 * never hours; `yLabel` says what is counted. It takes its container's width, and follows it when that changes.
 */
export function lineChart(dates: string[], lines: Line[], yLabel: string, height = 260): HTMLElement {
  const element = h("div", { class: "line-chart", role: "img", "aria-label": `${yLabel} by date` });
  const xs = dates.map((date) => Date.parse(date) / 1000);
  const sized = () => Math.max(element.clientWidth, 200);
  const plot = new uPlot(
    {
      width: 600,
      height,
      legend: { live: false },
      scales: { x: { time: true } },
      series: [{}, ...lines.map((line, i) => ({ label: line.label, stroke: PALETTE[i % PALETTE.length], width: 2 }))],
      axes: [
        {
          incrs: [DAY_S, 2 * DAY_S, 7 * DAY_S, 14 * DAY_S, 28 * DAY_S, 91 * DAY_S],
          values: (_u, ticks) => ticks.map(dayLabel),
        },
        { label: yLabel, size: 60, values: (_u, ticks) => ticks.map((tick) => formatNumber(tick)) },
      ],
    },
    [xs, ...lines.map((line) => line.values)],
    element,
  );
  new ResizeObserver(() => plot.setSize({ width: sized(), height })).observe(element);
  return element;
}

/** A small trend line without axes or legend, for a headline figure. */
export function sparkline(values: number[], colour = PALETTE[2]): HTMLElement {
  const element = h("div", { class: "sparkline" });
  const plot = new uPlot(
    {
      width: 160,
      height: 40,
      legend: { show: false },
      cursor: { show: false },
      scales: { x: { time: false } },
      axes: [{ show: false }, { show: false }],
      series: [{}, { stroke: colour, width: 1.5, points: { show: false } }],
    },
    [values.map((_, i) => i), values],
    element,
  );
  new ResizeObserver(() => plot.setSize({ width: Math.max(element.clientWidth, 60), height: 40 })).observe(element);
  return element;
}
