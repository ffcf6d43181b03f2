import { apiKey, ApiError, UnreachableError } from "./api.js";

export type Child = Node | string | number | null | undefined | false;
type Props = Record<string, string | number | boolean | ((event: Event) => void) | undefined>;

/** An element with attributes, `on<event>` listeners and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, "");
    else if (value !== undefined && value !== false) element.setAttribute(name, String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false)
      element.append(child instanceof Node ? child : typeof child === "number" ? formatNumber(child) : child);
  }
  return element;
}

/** 12,345 and 1,234.5: every figure the dashboard shows. */
export const formatNumber = (value: number, digits = 2): string =>
  value.toLocaleString("en-US", { maximumFractionDigits: digits });

/** A labelled form control. */
export function field(label: string, control: HTMLElement): HTMLLabelElement {
  return h("label", {}, h("span", {}, label), control);
}

/** What an error says on the page: the service's code and message, or that it did not answer. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) return `${error.code}: ${error.message}`;
  if (error instanceof UnreachableError) return `unreachable: ${error.message}`;
  return `error: ${(error as Error).message}`;
}

/** Shows the outcome of a one-off `action` (a save, a create) in `status`: the error, or nothing. */
export async function showing<T>(status: HTMLElement, action: () => Promise<T>): Promise<T | undefined> {
  status.replaceChildren();
  status.className = "status";
  try {
    return await action();
  } catch (error) {
    status.className = "status error";
    status.setAttribute("role", "alert");
    status.textContent = describeError(error);
    return undefined;
  }
}

/**
 * A table of `rows` under `headers`; numbers show with thousands separators. Each header is a button that sorts
 * the rows by its column (numbers as numbers), again to reverse.
 */
export function table(headers: string[], rows: Child[][], className = ""): HTMLTableElement {
  const body = h(
    "tbody",
    {},
    ...rows.map((row) =>
      h(
        "tr",
        {},
        ...row.map((cell) => h("td", typeof cell === "number" ? { "data-sort": cell, class: "number" } : {}, cell)),
      ),
    ),
  );
  const heads = headers.map((header, column) =>
    h("th", {}, h("button", { type: "button", class: "sort", onclick: () => sortBy(column) }, header)),
  );
  const sortBy = (column: number) => {
    const ascending = heads[column].getAttribute("aria-sort") !== "ascending";
    for (const head of heads) head.removeAttribute("aria-sort");
    heads[column].setAttribute("aria-sort", ascending ? "ascending" : "descending");
    const keyOf = (row: HTMLTableRowElement) => {
      const cell = row.cells[column];
      return cell?.dataset.sort ?? cell?.textContent ?? "";
    };
    const sorted = [...body.rows].sort((a, b) => compare(keyOf(a), keyOf(b)) * (ascending ? 1 : -1));
    body.replaceChildren(...sorted);
  };
  return h("table", { class: className }, h("thead", {}, h("tr", {}, ...heads)), body);
}

function compare(a: string, b: string): number {
  const [x, y] = [Number(a), Number(b)];
  if (a !== "" && b !== "" && Number.isFinite(x) && Number.isFinite(y)) return x - y;
  return a.localeCompare(b);
}

/** "a, b ,c" as ["a", "b", "c"]. */
export function list(text: string): string[] {
  return text
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/** Previous and Next around "page X of Y (N players)"; `go` loads another page. */
export function pageControls(
  info: { page: number; pages: number; total: number },
  noun: string,
  go: (page: number) => void,
): (Node | string)[] {
  const { page, pages, total } = info;
  return [
    h("button", { type: "button", name: "previous", disabled: page <= 1, onclick: () => go(page - 1) }, "Previous"),
    ` page ${page} of ${formatNumber(Math.max(pages, 1))} (${formatNumber(total)} ${noun}) `,
    h("button", { type: "button", name: "next", disabled: page >= pages, onclick: () => go(page + 1) }, "Next"),
  ];
}

/** A select of `[value, label]` choices. */
export function select(name: string, choices: [string, string][]): HTMLSelectElement {
  return h("select", { name }, ...choices.map(([value, label]) => h("option", { value }, label)));
}

/** Says, to a reader key, that `what` needs the project's private key; nothing for other keys. */
export function readerNote(what: string): HTMLElement | string {
  if (apiKey.type() !== "reader") return "";
  return h(
    "p",
    { class: "note" },
    `${what} needs the project's private key: you signed in with a reader key, which reads only.`,
  );
}
