import { apiKey, post, postLines } from "../api.js";
import { describeError, h, readerNote, showing, table } from "../dom.js";

type IdField = "partner_user_id" | "device_id";
interface KeptEvent {
  name: string;
  timestamp: string;
}
/** A line of players/data: the first `{profile}` (null: none), each next `{event}`, one of the player's kept events. */
type DataLine = { profile: unknown } | { event: KeptEvent };

/** Kept events counted for the events-per-day table; the download reads them all. */
const DAY_TABLE_EVENTS = 10_000;

/** The player's events per day and name, from their kept raw events (the first ones of a very active player). */
export function eventsPerDay(by: IdField, id: string): HTMLElement {
  const section = h("section", { class: "player-events" }, h("h3", {}, "Events per day"));
  const status = h("div", { class: "status loading", role: "status" }, "Loading…");
  section.append(status);
  const enough = new AbortController();
  const counts = new Map<string, number>();
  let counted = 0;
  const count = (line: DataLine) => {
    if (!("event" in line)) return;
    const key = `${line.event.timestamp.slice(0, 10)}\u0000${line.event.name}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    // The stream read no further than the table needs.
    if (++counted >= DAY_TABLE_EVENTS) enough.abort();
  };
  void (async () => {
    try {
      await postLines("players/data", { [by]: id }, count, enough.signal);
    } catch (error) {
      if (!enough.signal.aborted) throw error;
    }
    const rows = [...counts].sort(([a], [b]) => (a < b ? 1 : -1)).map(([key, n]) => [...key.split("\u0000"), n]);
    status.className = "status";
    status.textContent = rows.length === 0 ? "No kept events for this player." : "";
    if (enough.signal.aborted) status.textContent = `Counted from the first ${counted.toLocaleString()} kept events.`;
    if (rows.length > 0) section.append(table(["date", "event", "events"], rows, "player-events-table"));
  })().catch((error: unknown) => {
    status.className = "status error";
    status.textContent = describeError(error);
  });
  return section;
}

/** Download what the service holds about the player (players/data's NDJSON as it streams), and erase them. */
export function playerActions(by: IdField, id: string): HTMLElement {
  const status = h("div", { class: "status", role: "status" });
  const download = async () => {
    // The lines as Blob parts: the browser keeps their bytes, not the parsed events.
    const parts: Blob[] = [];
    await postLines<DataLine>("players/data", { [by]: id }, (line) =>
      parts.push(new Blob([JSON.stringify(line) + "\n"])),
    );
    const link = h("a", {
      href: URL.createObjectURL(new Blob(parts, { type: "application/x-ndjson" })),
      download: `player-${id}.ndjson`,
    });
    link.click();
    URL.revokeObjectURL(link.href);
    return parts.length;
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
