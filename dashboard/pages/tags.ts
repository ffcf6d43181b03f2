import { apiKey, post } from "../api.js";
import { field, h, pageControls, readerNote, showing, table } from "../dom.js";
import { requestView } from "../view.js";

interface TagRecord {
  tag: string;
  label: string;
  category: string | null;
  description: string | null;
  is_hidden: boolean;
  players_count: number;
}
interface TagsAnswer {
  tags: TagRecord[];
  tags_info: { total: number; pages: number; page: number };
  categories: string[];
}

const PAGE_SIZE = 20;

/** The tag list with player counts, text and category filters and paging; metadata edited in place. */
export function tagsPage(root: HTMLElement): void {
  const text = h("input", { name: "text", placeholder: "tag or label" });
  const category = h("select", { name: "category" }, h("option", { value: "*" }, "any category"));
  const form = h(
    "form",
    { class: "controls", onsubmit: (event) => (event.preventDefault(), (page = 1), void load()) },
    field("Text", text),
    field("Category", category),
    h("button", { type: "submit" }, "Filter"),
  );
  const view = requestView(
    form,
    "No tags match: players/update tags players (the private key), and their tags show here.",
  );
  const pager = h("p", { class: "pager" });
  const canEdit = apiKey.type() !== "reader";
  let page = 1;

  const load = () =>
    view.run(
      (signal) =>
        post<TagsAnswer>(
          "players/tags",
          {
            page,
            page_size: PAGE_SIZE,
            ...(text.value && { text: text.value }),
            ...(category.value !== "*" && { category: category.value }),
          },
          signal,
        ),
      (answer) => {
        const chosen = category.value;
        category.replaceChildren(
          h("option", { value: "*" }, "any category"),
          h("option", { value: "" }, "uncategorised"),
          ...answer.categories.map((name) => h("option", { value: name }, name)),
        );
        category.value = chosen;
        pager.replaceChildren(...pageControls(answer.tags_info, "tags", (next) => ((page = next), void load())));
        if (answer.tags.length === 0) return null;
        return [
          table(
            ["tag", "label", "category", "description", "hidden", "players", ""],
            answer.tags.map((record) => [
              record.tag,
              record.label,
              record.category ?? "",
              record.description ?? "",
              record.is_hidden ? "yes" : "",
              record.players_count,
              canEdit &&
                h(
                  "button",
                  { type: "button", class: "edit", "data-tag": record.tag, onclick: () => edit(record) },
                  "Edit",
                ),
            ]),
            "tags-table",
          ),
        ];
      },
    );

  const edit = (record: TagRecord) => {
    const label = h("input", { name: "label", value: record.label });
    const recordCategory = h("input", { name: "category", value: record.category ?? "" });
    const description = h("input", { name: "description", value: record.description ?? "" });
    const hidden = h("input", { type: "checkbox", name: "is_hidden", checked: record.is_hidden });
    const error = h("div", { class: "status" });
    const save = async () => {
      const saved = await showing(error, () =>
        post("players/tags/update", {
          tag: record.tag,
          label: label.value,
          category: recordCategory.value,
          description: description.value,
          is_hidden: hidden.checked,
        }),
      );
      if (saved) await load();
    };
    view.content.prepend(
      h(
        "form",
        { class: "tag-editor", onsubmit: (event) => (event.preventDefault(), void save()) },
        h("h2", {}, `Edit ${record.tag}`),
        field("Label", label),
        field("Category", recordCategory),
        field("Description", description),
        field("Hidden", hidden),
        h("button", { type: "submit" }, "Save"),
        error,
      ),
    );
  };

  root.replaceChildren(h("h1", {}, "Tags"), readerNote("Editing a tag"), form, view.status, view.content, pager);
  void load();
}
