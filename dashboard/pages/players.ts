import { post } from "../api.js";
import { field, h, pageControls, showing, table } from "../dom.js";
import { cohortFilterForm } from "../filters.js";

type Profile = Record<string, unknown> & { tags?: string[]; traits?: Record<string, unknown> };
interface SearchAnswer {
  players: Profile[];
  players_info: { total: number; pages: number; page: number };
}

const PAGE_SIZE = 20;
const show = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

/** One player by id, and a cohort search paged in the API's order. */
export function playersPage(root: HTMLElement): void {
  root.replaceChildren(h("h1", {}, "Players"), lookup(), search());
}

function lookup(): HTMLElement {
  const by = h(
    "select",
    { name: "by" },
    h("option", { value: "partner_user_id" }, "partner_user_id"),
    h("option", { value: "device_id" }, "device_id"),
  );
  const id = h("input", { name: "id", required: true });
  const status = h("div", { class: "status" });
  const profile = h("div", { class: "profile" });
  const find = async () => {
    const answer = await showing(status, () =>
      post<{ found: boolean; profile: Profile | null }>("players/get", { [by.value]: id.value }),
    );
    if (!answer) return;
    if (!answer.found || !answer.profile) return profile.replaceChildren(h("p", {}, "No such player."));
    const { tags = [], traits = {}, ...rest } = answer.profile;
    profile.replaceChildren(
      table(
        ["field", "value"],
        Object.entries(rest).map(([name, value]) => [name, show(value)]),
        "profile-fields",
      ),
      h("h3", {}, "Tags"),
      h("p", { class: "tags" }, tags.join(", ") || "none"),
      h("h3", {}, "Traits"),
      table(
        ["trait", "value"],
        Object.entries(traits).map(([name, value]) => [name, show(value)]),
        "profile-traits",
      ),
    );
  };
  return h(
    "section",
    {},
    h("h2", {}, "Look up"),
    h(
      "form",
      { class: "controls", onsubmit: (event) => (event.preventDefault(), void find()) },
      field("By", by),
      field("Id", id),
      h("button", { type: "submit" }, "Find"),
    ),
    status,
    profile,
  );
}

function search(): HTMLElement {
  const cohort = cohortFilterForm();
  const status = h("div", { class: "status" });
  const results = h("div", {});
  const pager = h("p", { class: "pager" });
  let page = 1;
  const load = async () => {
    const answer = await showing(status, () =>
      post<SearchAnswer>("players/search", { ...cohort.value(), page, page_size: PAGE_SIZE }),
    );
    if (!answer) return;
    results.replaceChildren(
      table(
        ["partner_user_id", "device_id", "tags", "traits"],
        answer.players.map((player) => [
          show(player.partner_user_id ?? ""),
          show(player.device_id ?? ""),
          (player.tags ?? []).join(", "),
          show(player.traits ?? {}),
        ]),
        "search-table",
      ),
    );
    pager.replaceChildren(...pageControls(answer.players_info, "players", (next) => ((page = next), void load())));
  };
  return h(
    "section",
    {},
    h("h2", {}, "Search"),
    h(
      "form",
      { class: "controls", onsubmit: (event) => (event.preventDefault(), (page = 1), void load()) },
      cohort.element,
      h("button", { type: "submit" }, "Search"),
    ),
    status,
    results,
    pager,
  );
}
