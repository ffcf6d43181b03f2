import { post } from "../api.js";
import { field, h, pageControls, select, table } from "../dom.js";
import { cohortFilterForm } from "../filters.js";
import { currentRoute, filterForm } from "../url-state.js";
import { cohortCsvButton } from "./players-export.js";
import { requestView } from "../view.js";
import { eventsPerDay, playerActions } from "./player-data.js";

type Profile = Record<string, unknown> & { tags?: string[]; traits?: Record<string, unknown> };
interface SearchAnswer {
  players: Profile[];
  players_info: { total: number; pages: number; page: number };
}

const PAGE_SIZE = 20;
const show = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

/** A player's page (by id, from the URL: a search row links to it) and a cohort search paged in the API's order. */
export function playersPage(root: HTMLElement): void {
  root.replaceChildren(h("h1", {}, "Players"), lookup(), search());
}

function lookup(): HTMLElement {
  const by = select("by", [
    ["partner_user_id", "partner_user_id"],
    ["device_id", "device_id"],
  ]);
  const id = h("input", { name: "id", required: true });
  const byField = () => by.value as "partner_user_id" | "device_id";
  const form = filterForm(() => void find(), field("By", by), field("Id", id));
  form.classList.add("lookup");
  const view = requestView(form, "");
  const find = () =>
    view.run(
      (signal) => post<{ found: boolean; profile: Profile | null }>("players/get", { [by.value]: id.value }, signal),
      (answer) =>
        answer.found && answer.profile
          ? [...profileOf(answer.profile), eventsPerDay(byField(), id.value), playerActions(byField(), id.value)]
          : [h("p", {}, "No such player.")],
    );
  if (id.value !== "") void find();
  return h("section", { class: "player" }, h("h2", {}, "Player"), form, view.status, view.content);
}

function profileOf(profile: Profile): Node[] {
  const { tags = [], traits = {}, ...rest } = profile;
  return [
    table(
      ["field", "value"],
      Object.entries(rest).map(([name, value]) => [name, show(value)]),
      "profile-fields",
    ),
    h("h3", {}, "Tags"),
    h("p", { class: "tags" }, tags.join(", ") || "none"),
    h("h3", {}, "Traits"),
    h(
      "div",
      { class: "scroll" },
      table(
        ["trait", "value"],
        Object.entries(traits).map(([name, value]) => [name, show(value)]),
        "profile-traits",
      ),
    ),
  ];
}

function search(): HTMLElement {
  const cohort = cohortFilterForm();
  const pager = h("p", { class: "pager" });
  let page = Number(currentRoute().params.get("page") ?? 1);
  const form = filterForm(() => ((page = 1), void load()), cohort.element);
  form.classList.add("search");
  const view = requestView(form, "No players match: players/update sends players (the private key).");
  const load = () =>
    view.run(
      (signal) => post<SearchAnswer>("players/search", { ...cohort.value(), page, page_size: PAGE_SIZE }, signal),
      (answer) => {
        pager.replaceChildren(...pageControls(answer.players_info, "players", (next) => ((page = next), void load())));
        if (answer.players.length === 0) return null;
        return [
          h(
            "div",
            { class: "scroll" },
            table(
              ["partner_user_id", "device_id", "tags", "traits"],
              answer.players.map((player) => [
                playerLink(player, "partner_user_id"),
                playerLink(player, "device_id"),
                (player.tags ?? []).join(", "),
                show(player.traits ?? {}),
              ]),
              "search-table",
            ),
          ),
        ];
      },
    );
  void load();
  const actions = cohortCsvButton(cohort.value);
  return h("section", {}, h("h2", {}, "Search"), form, view.status, view.content, pager, actions);
}

/** A link to the player's page by this id (which the URL then holds, so it can be shared). */
function playerLink(player: Profile, by: "partner_user_id" | "device_id"): Node | string {
  const id = player[by];
  if (typeof id !== "string") return "";
  return h("a", { href: `#players?${new URLSearchParams({ by, id })}` }, id);
}
