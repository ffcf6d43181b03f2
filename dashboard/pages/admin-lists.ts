import { post } from "../api.js";
import { field, h, pageControls, showing, table, type Child } from "../dom.js";
import { requestView } from "../view.js";

type Row = Record<string, unknown>;
interface Listing {
  title: string;
  path: string;
  /** The answer's list and page info are `<items>` and `<items>_info`. */
  items: string;
  columns: [string, (row: Row) => Child][];
  /** Optional filters, sent when set (numbers as numbers). */
  filters?: { name: string; label: string; type?: "number" }[];
  empty: string;
}

const PAGE_SIZE = 20;
const at = (value: unknown) => (typeof value === "string" ? value.replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC") : "");

/** One admin list (projects, keys, entitlements), paged, with its filters; `actions` adds a cell per row. */
function listing(spec: Listing, actions?: (row: Row, reload: () => void) => Child): HTMLElement {
  const inputs = (spec.filters ?? []).map((filter) => ({
    filter,
    input: h("input", { name: filter.name, type: filter.type ?? "text" }),
  }));
  const pager = h("p", { class: "pager" });
  let page = 1;
  const form = h(
    "form",
    { class: "controls", onsubmit: (event) => (event.preventDefault(), (page = 1), void load()) },
    ...inputs.map(({ filter, input }) => field(filter.label, input)),
    h("button", { type: "submit" }, "List"),
  );
  const view = requestView(form, spec.empty);
  const load = (): Promise<void> =>
    view.run(
      (signal) => {
        const filters = inputs
          .filter(({ input }) => input.value !== "")
          .map(({ filter, input }) => [filter.name, filter.type === "number" ? Number(input.value) : input.value]);
        return post<Record<string, unknown>>(
          spec.path,
          { page, page_size: PAGE_SIZE, ...Object.fromEntries(filters) },
          signal,
        );
      },
      (answer) => {
        const rows = answer[spec.items] as Row[];
        const info = answer[`${spec.items}_info`] as { page: number; pages: number; total: number };
        pager.replaceChildren(
          ...pageControls(info, spec.items.replace("_", " "), (next) => ((page = next), void load())),
        );
        if (rows.length === 0) return null;
        const headers = [...spec.columns.map(([name]) => name), ...(actions ? [""] : [])];
        const cells = rows.map((row) => [
          ...spec.columns.map(([, cell]) => cell(row)),
          ...(actions ? [actions(row, () => void load())] : []),
        ]);
        return [h("div", { class: "scroll" }, table(headers, cells, `${spec.items.replace("_", "-")}-table`))];
      },
    );
  void load();
  return h(
    "section",
    { class: "listing", "data-path": spec.path },
    h("h2", {}, spec.title),
    form,
    view.status,
    view.content,
    pager,
  );
}

export const projectsList = (): HTMLElement =>
  listing({
    title: "Projects",
    path: "admin/projects/list",
    items: "projects",
    columns: [
      ["project_id", (row) => String(row.project_id)],
      ["name", (row) => String(row.name)],
      ["game_id", (row) => Number(row.game_id)],
    ],
    empty: "No projects yet: create one below.",
  });

export const keysList = (): HTMLElement =>
  listing(
    {
      title: "API keys",
      path: "admin/api_keys/list",
      items: "api_keys",
      columns: [
        ["key_id", (row) => String(row.key_id)],
        ["type", (row) => String(row.type)],
        ["project_id", (row) => String(row.project_id ?? "")],
        ["created", (row) => at(row.created_at)],
        ["revoked", (row) => at(row.revoked_at)],
      ],
      filters: [{ name: "project_id", label: "Project id (empty: every key)" }],
      empty: "No keys match.",
    },
    (row, reload) => {
      if (row.revoked_at) return "";
      const status = h("span", { class: "status" });
      const revoke = async () => {
        if (await showing(status, () => post("admin/api_keys/revoke", { key_id: row.key_id }))) reload();
      };
      return h(
        "span",
        {},
        h(
          "button",
          { type: "button", name: "revoke", "data-key-id": String(row.key_id), onclick: () => void revoke() },
          "Revoke",
        ),
        status,
      );
    },
  );

export const entitlementsList = (): HTMLElement =>
  listing({
    title: "Entitlements",
    path: "admin/entitlements/list",
    items: "entitlements",
    columns: [
      ["platform_user_id", (row) => String(row.platform_user_id)],
      ...(["game_id", "owns", "source", "channel_id", "build_version"].map((name) => [
        name,
        (row: Row) => {
          const value = (row.entitlement as Row | undefined)?.[name];
          return typeof value === "number" ? value : String(value ?? "");
        },
      ]) as [string, (row: Row) => Child][]),
      ["updated", (row) => at(row.updated_at)],
    ],
    filters: [
      { name: "platform_user_id", label: "Platform user id" },
      { name: "game_id", label: "Game id", type: "number" },
    ],
    empty: "No entitlements match: the platform store records them (Set an entitlement below).",
  });
