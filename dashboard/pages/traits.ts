import { apiKey, post } from "../api.js";
import { h, pageControls, readerNote, showing, table } from "../dom.js";
import { requestView } from "../view.js";

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
  const view = requestView(null, "No trait keys yet: players/update gives players traits (the private key).");
  const status = h("div", { class: "status" });
  const pager = h("p", { class: "pager" });
  const canEdit = apiKey.type() !== "reader";
  let page = 1;

  const load = () =>
    view.run(
      (signal) => post<TraitsAnswer>("players/traits", { page, page_size: PAGE_SIZE }, signal),
      (answer) => {
        pager.replaceChildren(...pageControls(answer.traits_info, "keys", (next) => ((page = next), void load())));
        if (answer.traits.length === 0) return null;
        return [
          table(
            ["key", "materialised", ""],
            answer.traits.map((trait) => [
              trait.key,
              stateOf(trait),
              canEdit &&
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
        ];
      },
    );

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
    readerNote("Materialising a key"),
    view.status,
    status,
    view.content,
    pager,
  );
  void load();
}
