import "uplot/dist/uPlot.min.css";
import "./style.css";
import { apiKey, post } from "./api.js";
import { field, h, showing } from "./dom.js";
import { adminPage } from "./pages/admin.js";
import { eventsPage } from "./pages/events.js";
import { playersPage } from "./pages/players.js";
import { tagsPage } from "./pages/tags.js";
import { traitsPage } from "./pages/traits.js";
import { trendsPage } from "./pages/trends.js";

/** Pages by the name in the URL's fragment (#trends); the key is never part of a URL. */
const PROJECT_PAGES: Record<string, (root: HTMLElement) => void> = {
  trends: trendsPage,
  tags: tagsPage,
  traits: traitsPage,
  players: playersPage,
  events: eventsPage,
};
const ADMIN_PAGES: Record<string, (root: HTMLElement) => void> = { admin: adminPage };

const app = document.getElementById("app")!;

function render(): void {
  if (!apiKey.get()) return signIn();
  const pages = apiKey.isAdmin() ? ADMIN_PAGES : PROJECT_PAGES;
  const names = Object.keys(pages);
  const current = names.includes(location.hash.slice(1)) ? location.hash.slice(1) : names[0];
  const page = h("div", { class: "page", "data-page": current });
  const signOut = () => {
    apiKey.clear();
    render();
  };
  app.replaceChildren(
    h(
      "nav",
      {},
      ...names.map((name) => h("a", { href: `#${name}`, class: name === current ? "current" : "" }, name)),
      h("button", { type: "button", name: "sign-out", onclick: signOut }, "Sign out"),
    ),
    page,
  );
  pages[current](page);
}

/** A project's private key (or the admin key). A project key is checked at once, so a wrong one shows the service's error. */
function signIn(): void {
  const key = h("input", { type: "password", name: "api-key", autocomplete: "off", required: true });
  const status = h("div", { class: "status" });
  const submit = async () => {
    apiKey.set(key.value);
    if (apiKey.isAdmin()) return render();
    const checked = await showing(status, () => post("players/tags", { page: 1, page_size: 1 }));
    if (checked) return render();
    apiKey.clear();
  };
  app.replaceChildren(
    h(
      "form",
      { class: "sign-in", onsubmit: (event) => (event.preventDefault(), void submit()) },
      h("h1", {}, "Platform dashboard"),
      field("API key (a project's private key, or an admin key)", key),
      h("button", { type: "submit" }, "Sign in"),
      status,
    ),
  );
}

window.addEventListener("hashchange", render);
render();
