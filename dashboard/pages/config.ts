import { apiKey, post } from "../api.js";
import { describeError, h, pageControls, readerNote, table } from "../dom.js";
import { requestView } from "../view.js";
import { entryEditor, historyOf, json, type Entry } from "./config-editor.js";

interface ConfigAnswer {
  entries: Entry[];
  entries_info: { total: number; pages: number; page: number };
}

const PAGE_SIZE = 20;

/**
 * The project's config entries (config/list) with their default values and rules; with the private key an entry is
 * created, edited (rules with the cohort form of every page), deleted, and restored from its history.
 */
export function configPage(root: HTMLElement): void {
  const view = requestView(
    null,
    "No config entries yet: New entry (or config/update with the private key) sets a key's value by cohort.",
  );
  const pager = h("p", { class: "pager" });
  const panel = h("div", { class: "panel" });
  const canEdit = apiKey.type() !== "reader";
  let page = 1;

  const reload = () => {
    panel.replaceChildren();
    void load();
  };
  const showHistory = async (key: string) => {
    try {
      panel.replaceChildren(await historyOf(key, canEdit, reload));
    } catch (error) {
      panel.replaceChildren(h("div", { class: "status error", role: "alert" }, describeError(error)));
    }
  };
  const load = () =>
    view.run(
      (signal) => post<ConfigAnswer>("config/list", { page, page_size: PAGE_SIZE }, signal),
      (answer) => {
        pager.replaceChildren(...pageControls(answer.entries_info, "entries", (next) => ((page = next), void load())));
        if (answer.entries.length === 0) return null;
        return [
          table(
            ["key", "default value", "rules", "in launch", "version", "updated", ""],
            answer.entries.map((entry) => [
              entry.key,
              json(entry.default_value),
              entry.rules.length,
              entry.in_launch ? "yes" : "",
              entry.version,
              entry.updated_at,
              h(
                "span",
                { class: "actions" },
                canEdit &&
                  h(
                    "button",
                    {
                      type: "button",
                      class: "edit",
                      "data-key": entry.key,
                      onclick: () => panel.replaceChildren(entryEditor(entry, reload)),
                    },
                    "Edit",
                  ),
                h(
                  "button",
                  {
                    type: "button",
                    class: "history",
                    "data-key": entry.key,
                    onclick: () => void showHistory(entry.key),
                  },
                  "History",
                ),
              ),
            ]),
            "config-table",
          ),
        ];
      },
    );

  const newEntry = canEdit
    ? h(
        "button",
        { type: "button", name: "new-entry", onclick: () => panel.replaceChildren(entryEditor(null, reload)) },
        "New entry",
      )
    : "";
  root.replaceChildren(
    h("h1", {}, "Config"),
    h(
      "p",
      {},
      "What the game should be for each player: a key's value by cohort (tags and traits as of now) and rollout. Entries in the launch are in every verify's answer.",
    ),
    readerNote("Changing config"),
    newEntry,
    panel,
    view.status,
    view.content,
    pager,
  );
  void load();
}
