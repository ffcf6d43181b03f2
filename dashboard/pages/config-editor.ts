import { post } from "../api.js";
import { field, h, showing, table } from "../dom.js";
import { cohortFilterForm, type CohortFilter } from "../filters.js";

// The config page's editor of one entry (its rules with the cohort form of every page) and an entry's history.

export interface Rule extends CohortFilter {
  rollout_percent: number | null;
  value: unknown;
}
export interface Entry {
  key: string;
  default_value: unknown;
  rules: Rule[];
  in_launch: boolean;
  version: number;
  updated_at: string;
}
interface Version {
  version: number;
  entry: Entry | null;
  updated_at: string;
  key_id: string;
}

/** A value as the page shows it: its JSON. */
export const json = (value: unknown): string => JSON.stringify(value);

/** The JSON a text area holds, or an error naming the field as the API would. */
function parsed(field: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${field}: not JSON (write "text" in quotes, numbers, true, null, [..] or {..})`);
  }
}

/** One rule: who (the cohort form), how many of them (a rollout), and what they get. */
function ruleEditor(rule: Partial<Rule>, remove: (element: HTMLElement) => void) {
  const cohort = cohortFilterForm(rule);
  const rollout = h("input", {
    type: "number",
    name: "rollout_percent",
    min: 0,
    max: 100,
    step: 0.01,
    placeholder: "everyone",
    value: rule.rollout_percent ?? undefined,
  });
  const value = h("textarea", { name: "value", rows: 2 });
  value.value = "value" in rule ? json(rule.value) : "";
  const element = h(
    "fieldset",
    { class: "rule" },
    h("legend", {}, "Rule"),
    cohort.element,
    field("Rollout %", rollout),
    field("Value (JSON)", value),
    h("button", { type: "button", name: "remove-rule", onclick: () => remove(element) }, "Remove"),
  );
  const read = (i: number): Rule => ({
    ...cohort.value(),
    rollout_percent: rollout.value === "" ? null : Number(rollout.value),
    value: parsed(`rules[${i}].value`, value.value),
  });
  return { element, read };
}

/** A new entry (null) or a change of `entry`: saved with config/update, or deleted; `done` redraws the list. */
export function entryEditor(entry: Entry | null, done: () => void): HTMLFormElement {
  const key = h("input", { name: "key", required: true, value: entry?.key, readonly: entry !== null });
  const defaultValue = h("textarea", { name: "default_value", rows: 2, required: true });
  defaultValue.value = entry ? json(entry.default_value) : "";
  const inLaunch = h("input", { type: "checkbox", name: "in_launch", checked: entry?.in_launch ?? false });
  const rules = h("div", { class: "rules" });
  const editors: ReturnType<typeof ruleEditor>[] = [];
  const addRule = (rule: Partial<Rule>) => {
    const editor = ruleEditor(rule, (element) => {
      editors.splice(editors.indexOf(editor), 1);
      element.remove();
    });
    editors.push(editor);
    rules.append(editor.element);
  };
  (entry?.rules ?? []).forEach(addRule);
  const status = h("div", { class: "status" });
  const save = () =>
    showing(status, async () => {
      const body = {
        key: key.value,
        default_value: parsed("default_value", defaultValue.value),
        rules: editors.map((editor, i) => editor.read(i)),
        in_launch: inLaunch.checked,
      };
      await post("config/update", body);
      done();
    });
  const remove = () => showing(status, () => post("config/delete", { key: key.value }).then(done));
  return h(
    "form",
    { class: "config-editor", onsubmit: (event) => (event.preventDefault(), void save()) },
    h("h2", {}, entry ? `Edit ${entry.key}` : "New entry"),
    field("Key", key),
    field("Default value (JSON)", defaultValue),
    field("In the launch (every verify answers it)", inLaunch),
    h("p", { class: "note" }, "Rules in order: the first whose cohort and rollout take the player decides."),
    rules,
    h("button", { type: "button", name: "add-rule", onclick: () => addRule({}) }, "Add rule"),
    h("button", { type: "submit" }, "Save"),
    entry && h("button", { type: "button", name: "delete", onclick: () => void remove() }, "Delete"),
    status,
  );
}

/** An entry's versions, newest first, each restorable (with the private key) as a new version. */
export async function historyOf(key: string, canRestore: boolean, done: () => void): Promise<HTMLElement> {
  const status = h("div", { class: "status" });
  const { versions } = await post<{ versions: Version[] }>("config/history", { key, page_size: 100 });
  const restore = (version: number) => showing(status, () => post("config/restore", { key, version }).then(done));
  return h(
    "section",
    { class: "config-history" },
    h("h2", {}, `History of ${key}`),
    table(
      ["version", "when", "by key", "default value", "rules", "in launch", ""],
      versions.map(({ version, entry, updated_at, key_id }) => [
        version,
        updated_at,
        key_id,
        entry ? json(entry.default_value) : "deleted",
        entry ? entry.rules.length : "",
        entry?.in_launch ? "yes" : "",
        canRestore &&
          entry &&
          h(
            "button",
            { type: "button", name: "restore", "data-version": version, onclick: () => void restore(version) },
            "Restore",
          ),
      ]),
      "history-table",
    ),
    status,
  );
}
