import { post } from "../api.js";
import { h, pageControls, showing, table } from "../dom.js";

interface TraitRecord {
  key: string;
  materialised: boolean;
  ready: boolean;
}
interface TraitsAnswer {
  traits: TraitRecord[];
  traits_info: { total: number; pages: number; page: number };
}

const PAGE_SIZE = 50;

function stateOf({ materialised, ready }: TraitRecord): string {
  if (!materialised) return "not materialised";
  return ready ? "materialised, ready" : "materialised, backfilling (filters take the exact path until ready)";
}

/**
 * The project's trait keys (players/traits), each with its materialisation state and, while it has none, a switch
 * that materialises it (players/traits/update). Only a listed key can be materialised, so no key is typed.
 */
export function traitsPage(root: HTMLElement): void {
  const status = h("div", { class: "status" });
  const list = h("div", {});
  const pager = h("p", { class: "pager" });
  let page = 1;

  const load = async () => {
    const answer = await showing(status, () => post<TraitsAnswer>("players/traits", { page, page_size: PAGE_SIZE }));
    if (!answer) return;
    list.replaceChildren(
      table(
        ["key", "materialised", ""],
        answer.traits.map((trait) => [
          trait.key,
          stateOf(trait),
          !trait.materialised &&
            h(
              "button",
              {
                type: "button",
                name: "materialise",
                "data-key": trait.key,
                onclick: () => void materialise(trait.key),
              },
              "Materialise",
            ),
        ]),
        "traits-table",
      ),
    );
    pager.replaceChildren(...pageControls(answer.traits_info, "keys", (next) => ((page = next), void load())));
  };

  const materialise = async (key: string) => {
    const answer = await showing(status, () => post("players/traits/update", { key, materialise: true }));
    if (answer) await load();
  };

  root.replaceChildren(
    h("h1", {}, "Traits"),
    h(
      "p",
      {},
      "A materialised trait key gets daily rollups per value, so trends filtered on it read rollups instead of every player's history. Keys with at most 20 values are materialised on their own.",
    ),
    status,
    list,
    pager,
  );
  void load();
}
