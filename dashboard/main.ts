import "uplot/dist/uPlot.min.css";
import "./style.css";
import { apiKey, post } from "./api.js";
import { field, h, showing } from "./dom.js";
import { adminPage } from "./pages/admin.js";
import { configPage } from "./pages/config.js";
import { eventsPage } from "./pages/events.js";
import { experimentsPage } from "./pages/experiments.js";
import { overviewPage } from "./pages/overview.js";
import { playersPage } from "./pages/players.js";
import { retentionPage } from "./pages/retention.js";
import { tagsPage } from "./pages/tags.js";
import { traitsPage } from "./pages/traits.js";
import { trendsPage } from "./pages/trends.js";
import { currentRoute } from "./url-state.js";
import { KEY_REFUSED } from "./view.js";

const PRODUCT = "Platform dashboard";

/** Pages by the name in the URL's fragment (#trends?...); the key is never part of a URL. */
const PROJECT_PAGES: Record<string, (root: HTMLElement) => void> = {
  overview: overviewPage,
  retention: retentionPage,
  trends: trendsPage,
  players: playersPage,
  tags: tagsPage,
  traits: traitsPage,
  events: eventsPage,
  config: configPage,
  experiments: experimentsPage,
};
const ADMIN_PAGES: Record<string, (root: HTMLElement) => void> = { admin: adminPage };
const KEY_NAMES = {
  admin: "an admin key",
  reader: "a reader key (read only)",
  private: "a private key",
  other: "a key",
};

const app = document.getElementById("app")!;

interface CurrentProject {
  project: { project_id: string; name: string; game_id: number };
}
/** The signed-in project's name, asked once per key (project/get) and shown in the header. */
let projectName: { key: string; name: Promise<string> } | undefined;
function nameOfProject(): Promise<string> {
  const key = apiKey.get() ?? "";
  if (projectName?.key !== key) {
    const name = post<CurrentProject>("project/get", {}).then(
      ({ project }) => project.name,
      (error: unknown) => {
        projectName = undefined; // asked again next time: the service may answer then
        throw error;
      },
    );
    projectName = { key, name };
  }
  return projectName.name;
}

function render(): void {
  if (!apiKey.get()) return signIn();
  const pages = apiKey.type() === "admin" ? ADMIN_PAGES : PROJECT_PAGES;
  const names = Object.keys(pages);
  const route = currentRoute().page;
  const current = names.includes(route) ? route : names[0];
  const page = h("div", { class: "page", "data-page": current });
  const signOut = () => {
    apiKey.clear();
    render();
  };
  app.replaceChildren(
    h(
      "header",
      {},
      h("span", { class: "product" }, PRODUCT),
      projectHeading(),
      h("span", { class: "signed-in" }, `signed in with ${KEY_NAMES[apiKey.type()]}`),
      h("button", { type: "button", name: "sign-out", onclick: signOut }, "Sign out"),
    ),
    h(
      "nav",
      {},
      ...names.map((name) =>
        h(
          "a",
          { href: `#${name}`, class: name === current ? "current" : "", "aria-current": name === current && "page" },
          name,
        ),
      ),
    ),
    page,
  );
  document.title = `${current} · ${PRODUCT}`;
  pages[current](page);
}

/** The project signed into (the platform, for the admin key), filled in when its name is known. */
function projectHeading(): HTMLElement {
  if (apiKey.type() === "admin") return h("strong", { class: "project" }, "all projects");
  const heading = h("strong", { class: "project" }, "");
  nameOfProject().then(
    (name) => (heading.textContent = name),
    () => undefined, // the page's own call shows why the service refused or did not answer
  );
  return heading;
}

/** A project's private or reader key (or the admin key). A project key is checked at once: a wrong one shows the service's error. */
function signIn(message = ""): void {
  const key = h("input", { type: "password", name: "api-key", autocomplete: "off", required: true });
  const status = h("div", { class: message ? "status error" : "status", role: "alert" }, message);
  const submit = async () => {
    apiKey.set(key.value);
    if (apiKey.type() === "admin") return render();
    const checked = await showing(status, () => nameOfProject());
    if (checked) return render();
    apiKey.clear();
  };
  document.title = PRODUCT;
  app.replaceChildren(
    h(
      "form",
      { class: "sign-in", onsubmit: (event) => (event.preventDefault(), void submit()) },
      h("h1", {}, PRODUCT),
      field("API key (a project's private or reader key, or an admin key)", key),
      h("button", { type: "submit" }, "Sign in"),
      status,
    ),
  );
  key.focus();
}

// A page writes its own filters into the URL with history.replaceState, which fires no hashchange.
window.addEventListener("hashchange", render);
window.addEventListener(KEY_REFUSED, (event) => {
  apiKey.clear();
  signIn(`${(event as CustomEvent<string>).detail}. Sign in again.`);
});
render();
