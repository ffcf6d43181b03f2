import { apiKey, post } from "../api.js";
import { describeError, h, readerNote, showing, table } from "../dom.js";

type IdField = "partner_user_id" | "device_id";
interface KeptEvent {
  name: string;
  timestamp: string;
}
interface DataPage {
  found?: boolean;
  profile?: unknown;
  events?: KeptEvent[];
  next_cursor?: string;
}

/** Pages read for the events-per-day table: 10 pages of at most 1,000 events; the download reads them all. */
const DAY_TABLE_PAGES = 10;

/** The player's kept data, a page at a time (players/data follows its cursor), up to `maxPages`. */
async function* dataPages(by: IdField, id: string, maxPages = Infinity): AsyncGenerator<DataPage> {
  let cursor = "";
  for (let page = 0; page < maxPages; page++) {
    const answer = await post<DataPage>("players/data", { [by]: id, cursor });
    yield answer;
    cursor = answer.next_cursor ?? "";
    if (cursor === "") return;
  }
}

/** The player's events per day and name, from their kept raw events (the first pages of a very active player). */
export function eventsPerDay(by: IdField, id: string): HTMLElement {
  const section = h("section", { class: "player-events" }, h("h3", {}, "Events per day"));
  const status = h("div", { class: "status loading", role: "status" }, "Loading…");
  section.append(status);
  void (async () => {
    const counts = new Map<string, number>();
    let complete = false;
    for await (const page of dataPages(by, id, DAY_TABLE_PAGES)) {
      for (const event of page.events ?? []) {
        const key = `${event.timestamp.slice(0, 10)}\u0000${event.name}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      complete = (page.next_cursor ?? "") === "";
    }
    const rows = [...counts].sort(([a], [b]) => (a < b ? 1 : -1)).map(([key, n]) => [...key.split("\u0000"), n]);
    status.className = "status";
    status.textContent = rows.length === 0 ? "No kept events for this player." : "";
    if (!complete) status.textContent = `Counted from the first ${DAY_TABLE_PAGES * 1_000} kept events.`;
    if (rows.length > 0) section.append(table(["date", "event", "events"], rows, "player-events-table"));
  })().catch((error: unknown) => {
    status.className = "status error";
    status.textContent = describeError(error);
  });
  return section;
}

/** Download what the service holds about the player (NDJSON), and erase them (private key, after a confirmation). */
export function playerActions(by: IdField, id: string): HTMLElement {
  const status = h("div", { class: "status", role: "status" });
  const download = async () => {
    const lines: string[] = [];
    for await (const page of dataPages(by, id)) {
      if (page.profile !== undefined) lines.push(JSON.stringify({ profile: page.profile }));
      for (const event of page.events ?? []) lines.push(JSON.stringify({ event }));
    }
    const link = h("a", {
      href: URL.createObjectURL(new Blob([lines.join("\n") + "\n"], { type: "application/x-ndjson" })),
      download: `player-${id}.ndjson`,
    });
    link.click();
    URL.revokeObjectURL(link.href);
    return lines.length;
  };
  const erase = async () => {
    if (!window.confirm(`Erase the player ${id} and all their data? This cannot be undone.`)) return;
    const answer = await showing(status, () =>
      post<{ deleted?: boolean; identity_key?: string }>("players/delete", { [by]: id }),
    );
    if (answer) status.textContent = answer.deleted ? `Erased ${answer.identity_key}.` : "No such player.";
  };
  return h(
    "div",
    { class: "player-actions" },
    h(
      "button",
      { type: "button", name: "download-data", onclick: () => void showing(status, download) },
      "Download data (NDJSON)",
    ),
    apiKey.type() === "reader"
      ? readerNote("Erasing a player")
      : h(
          "button",
          { type: "button", name: "delete-player", class: "danger", onclick: () => void erase() },
          "Delete player…",
        ),
    status,
  );
}
