import { ApiError } from "./api.js";

type Child = Node | string | number | null | undefined | false;
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
      element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

/** A labelled form control. */
export function field(label: string, control: HTMLElement): HTMLLabelElement {
  return h("label", {}, h("span", {}, label), control);
}

/** Shows the outcome of `action` in `status`: the service's error (code and message), or nothing. */
export async function showing<T>(status: HTMLElement, action: () => Promise<T>): Promise<T | undefined> {
  status.replaceChildren();
  status.className = "status";
  try {
    return await action();
  } catch (error) {
    status.className = "status error";
    status.setAttribute("role", "alert");
    status.textContent =
      error instanceof ApiError ? `${error.code}: ${error.message}` : `error: ${(error as Error).message}`;
    return undefined;
  }
}

/** A table of `rows` under `headers`. */
export function table(headers: string[], rows: Child[][], className = ""): HTMLTableElement {
  return h(
    "table",
    { class: className },
    h("thead", {}, h("tr", {}, ...headers.map((header) => h("th", {}, header)))),
    h("tbody", {}, ...rows.map((row) => h("tr", {}, ...row.map((cell) => h("td", {}, cell))))),
  );
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
    ` page ${page} of ${Math.max(pages, 1)} (${total} ${noun}) `,
    h("button", { type: "button", name: "next", disabled: page >= pages, onclick: () => go(page + 1) }, "Next"),
  ];
}
