import { post } from "../api.js";
import { field, h, showing } from "../dom.js";
import { entitlementsList, keysList, projectsList } from "./admin-lists.js";

interface Input {
  name: string;
  label: string;
  /** "number" sends a number, "checkbox" a boolean, "select" one of `options`; anything else text. */
  type?: "text" | "number" | "checkbox" | "select";
  options?: string[];
}

/** The admin key's calls: lists of projects, keys and entitlements; creation (keys shown once), revocation, rotation. */
export function adminPage(root: HTMLElement): void {
  root.replaceChildren(
    h("h1", {}, "Admin"),
    h("p", {}, "New keys are shown once, here: copy them now. Nothing on this page is kept after you leave it."),
    projectsList(),
    keysList(),
    entitlementsList(),
    adminForm("Create a project", "admin/projects", [
      { name: "name", label: "Name" },
      { name: "game_id", label: "Game id", type: "number" },
    ]),
    adminForm("Create an API key", "admin/api_keys", [
      { name: "project_id", label: "Project id (private and public keys)" },
      { name: "type", label: "Type", type: "select", options: ["private", "public", "reader", "platform", "admin"] },
    ]),
    adminForm("Revoke an API key", "admin/api_keys/revoke", [{ name: "key_id", label: "Key id" }]),
    adminForm("Set an entitlement", "admin/entitlements", [
      { name: "platform_user_id", label: "Platform user id" },
      { name: "game_id", label: "Game id", type: "number" },
      { name: "owns", label: "Owns", type: "checkbox" },
      { name: "source", label: "Source" },
      { name: "channel_id", label: "Channel id" },
      { name: "build_version", label: "Build version" },
    ]),
    adminForm("Rotate the signing key", "admin/signing_keys/rotate", []),
  );
}

function adminForm(title: string, path: string, inputs: Input[]): HTMLElement {
  const controls = inputs.map((input) => ({ input, control: controlOf(input) }));
  const status = h("div", { class: "status" });
  const answer = h("pre", { class: "answer" });
  const submit = async () => {
    answer.textContent = "";
    const body = Object.fromEntries(controls.map(({ input, control }) => [input.name, valueOf(input, control)]));
    const result = await showing(status, () => post(path, body));
    if (result) answer.textContent = JSON.stringify(result, null, 2);
  };
  return h(
    "form",
    { class: "admin-form", "data-path": path, onsubmit: (event) => (event.preventDefault(), void submit()) },
    h("h2", {}, title),
    ...controls.map(({ input, control }) => field(input.label, control)),
    h("button", { type: "submit" }, title),
    status,
    answer,
  );
}

function controlOf(input: Input): HTMLInputElement | HTMLSelectElement {
  if (input.type === "select") {
    return h(
      "select",
      { name: input.name },
      ...(input.options ?? []).map((option) => h("option", { value: option }, option)),
    );
  }
  if (input.type === "checkbox") return h("input", { type: "checkbox", name: input.name, checked: true });
  return h("input", { type: input.type ?? "text", name: input.name });
}

function valueOf(input: Input, control: HTMLInputElement | HTMLSelectElement): unknown {
  if (input.type === "checkbox") return (control as HTMLInputElement).checked;
  if (input.type === "number") return Number(control.value);
  return control.value;
}
