import { ApiError, postLines } from "../api.js";
import { h } from "../dom.js";
import type { CohortFilter } from "../filters.js";

type Profile = Record<string, unknown> & { tags?: string[]; traits?: Record<string, unknown> };

/** The CSV's columns: a profile's fields, its tags joined by spaces (a tag has none), its traits as JSON. */
export const CSV_COLUMNS = [
  "identity_key",
  "partner_user_id",
  "device_id",
  "platform_user_id",
  "linked",
  "tags",
  "traits",
  "first_seen_at",
  "last_seen_at",
] as const;

/** Rows gathered into one string, then a Blob of the file's parts: the bytes are the browser's to keep, not the page's. */
const ROWS_A_PART = 5_000;

const quote = (text: string) => (/[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text);

function csvRow(profile: Profile): string {
  return CSV_COLUMNS.map((column) => {
    const value = profile[column];
    if (column === "tags") return quote((profile.tags ?? []).join(" "));
    if (column === "traits") return quote(JSON.stringify(profile.traits ?? {}));
    return value === null || value === undefined ? "" : quote(String(value));
  }).join(",");
}

/**
 * "Download CSV" of the cohort the search form holds: players/export read line by line into the parts of a
 * Blob (the browser keeps its bytes, not a million objects), then saved as players.csv in one click.
 */
export function cohortCsvButton(filter: () => CohortFilter): HTMLElement {
  const status = h("span", { class: "status", role: "status" });
  const button = h("button", { type: "button", name: "csv" }, "Download CSV");
  button.onclick = async () => {
    button.disabled = true;
    status.textContent = "exporting…";
    const parts: Blob[] = [new Blob([CSV_COLUMNS.join(",") + "\n"])];
    let rows: string[] = [];
    let count = 0;
    try {
      await postLines<{ player: Profile }>("players/export", filter(), ({ player }) => {
        rows.push(csvRow(player) + "\n");
        if (rows.length === ROWS_A_PART) {
          parts.push(new Blob([rows.join("")]));
          rows = [];
          status.textContent = `exporting… ${(count += ROWS_A_PART).toLocaleString()} players`;
        }
      });
      parts.push(new Blob([rows.join("")]));
      count += rows.length;
      const url = URL.createObjectURL(new Blob(parts, { type: "text/csv" }));
      h("a", { href: url, download: "players.csv" }).click();
      URL.revokeObjectURL(url);
      status.textContent = `${count.toLocaleString()} players exported`;
    } catch (error) {
      const prefix = error instanceof ApiError ? `${error.code}: ` : "";
      status.textContent = `${prefix}${(error as Error).message}`;
    } finally {
      button.disabled = false;
    }
  };
  return h("div", { class: "cohort-actions" }, button, status);
}
