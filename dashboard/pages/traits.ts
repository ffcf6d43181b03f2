import { post } from "../api.js";
import { field, h, showing } from "../dom.js";

interface TraitAnswer {
  key: string;
  materialised: boolean;
  ready: boolean;
}

/**
 * Materialising a trait key (players/traits/update). The API lists no trait keys yet, so the key is typed; keys
 * with at most 20 values are materialised on their own.
 */
export function traitsPage(root: HTMLElement): void {
  const key = h("input", { name: "key", placeholder: "tier", required: true });
  const status = h("div", { class: "status" });
  const results = h("ul", { class: "traits" });
  const materialise = async () => {
    const answer = await showing(status, () =>
      post<TraitAnswer>("players/traits/update", { key: key.value, materialise: true }),
    );
    if (!answer) return;
    const state = answer.ready
      ? "materialised, ready"
      : "materialised, backfilling (filters take the exact path until ready)";
    results.querySelector(`[data-key="${CSS.escape(answer.key)}"]`)?.remove();
    results.prepend(h("li", { "data-key": answer.key }, h("code", {}, answer.key), `: ${state}`));
  };
  root.replaceChildren(
    h("h1", {}, "Traits"),
    h(
      "p",
      {},
      "A materialised trait key gets daily rollups per value, so trends filtered on it read rollups instead of every player's history.",
    ),
    h(
      "form",
      { class: "controls", onsubmit: (event) => (event.preventDefault(), void materialise()) },
      field("Trait key", key),
      h("button", { type: "submit", name: "materialise" }, "Materialise"),
    ),
    status,
    results,
  );
}
