import { field, h, list } from "./dom.js";

/** The cohort filters every date-range read and the player search take. */
export interface CohortFilter {
  tags?: string[];
  tags_match?: "any" | "all";
  tags_none?: string[];
  traits?: Record<string, string | number | boolean>;
}

/**
 * Tags any/all, tags none, and traits (`key=value` a line; numbers and true/false as such, "5" as a string), showing
 * `initial` (a filter the API answered) when given.
 */
export function cohortFilterForm(initial: CohortFilter = {}): { element: HTMLElement; value: () => CohortFilter } {
  const tags = h("input", { name: "tags", placeholder: "vip, team_a", value: (initial.tags ?? []).join(", ") });
  const match = h(
    "select",
    { name: "tags_match" },
    h("option", { value: "any" }, "any"),
    h("option", { value: "all", selected: initial.tags_match === "all" }, "all"),
  );
  const none = h("input", { name: "tags_none", placeholder: "churned", value: (initial.tags_none ?? []).join(", ") });
  const traits = h("textarea", { name: "traits", rows: 2, placeholder: "tier=gold\nlevel=5" });
  traits.value = Object.entries(initial.traits ?? {})
    .map(([key, value]) => `${key}=${traitText(value)}`)
    .join("\n");
  const element = h(
    "fieldset",
    { class: "filters" },
    h("legend", {}, "Cohort"),
    field("Tags", tags),
    field("Match", match),
    field("Without tags", none),
    field("Traits", traits),
  );
  const value = (): CohortFilter => {
    const filter: CohortFilter = {};
    if (list(tags.value).length > 0) {
      filter.tags = list(tags.value);
      filter.tags_match = match.value as "any" | "all";
    }
    // Sent only when set: a service without tags_none refuses no request that leaves it out.
    if (list(none.value).length > 0) filter.tags_none = list(none.value);
    const pairs = traits.value
      .split("\n")
      .map((line) => line.split("="))
      .filter((pair) => pair.length >= 2 && pair[0].trim() !== "");
    if (pairs.length > 0) {
      filter.traits = Object.fromEntries(
        pairs.map(([key, ...rest]) => [key.trim(), traitValue(rest.join("=").trim())]),
      );
    }
    return filter;
  };
  return { element, value };
}

/** A trait value as the form writes it: a string that would read as a number or boolean quoted ("5"). */
function traitText(value: string | number | boolean): string {
  return typeof value === "string" && traitValue(value) !== value ? JSON.stringify(value) : String(value);
}

function traitValue(text: string): string | number | boolean {
  if (text === "true" || text === "false") return text === "true";
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  const quoted = /^"(.*)"$/.exec(text);
  return quoted ? quoted[1] : text;
}

/** UTC dates `YYYY-MM-DD`, inclusive, as the API reads them. */
export interface DateRange {
  from: string;
  to: string;
}

const DAY_MS = 86_400_000;
export const isoDay = (date: Date): string => date.toISOString().slice(0, 10);
export const addDays = (day: string, days: number): string => isoDay(new Date(Date.parse(day) + days * DAY_MS));
export const daysIn = ({ from, to }: DateRange): number => Math.round((Date.parse(to) - Date.parse(from)) / DAY_MS) + 1;
/** The period of the same length just before `range`. */
export const previousRange = (range: DateRange): DateRange => ({
  from: addDays(range.from, -daysIn(range)),
  to: addDays(range.from, -1),
});

/** Last 7 / 30 / 90 days (today included, UTC) or chosen dates; a shared "last N days" view moves with the day. */
export function dateRangeForm(days = 30): { element: HTMLElement; value: () => DateRange } {
  const preset = h(
    "select",
    { name: "range" },
    ...[7, 14, 30, 90].map((n) => h("option", { value: n, selected: n === days }, `Last ${n} days`)),
    h("option", { value: "custom" }, "Chosen dates"),
  );
  const from = h("input", { type: "date", name: "from" });
  const to = h("input", { type: "date", name: "to" });
  const value = (): DateRange => {
    if (preset.value === "custom") return { from: from.value, to: to.value };
    const today = isoDay(new Date());
    return { from: addDays(today, 1 - Number(preset.value)), to: today };
  };
  const showPreset = () => {
    if (preset.value === "custom") return;
    ({ from: from.value, to: to.value } = value());
  };
  preset.addEventListener("change", showPreset);
  for (const input of [from, to]) input.addEventListener("change", () => (preset.value = "custom"));
  showPreset();
  const element = h(
    "fieldset",
    { class: "range" },
    h("legend", {}, "Dates"),
    field("Range", preset),
    field("From", from),
    field("To", to),
  );
  // The URL may set the preset after this: the dates shown follow it at the next value().
  return { element, value: () => (showPreset(), value()) };
}
