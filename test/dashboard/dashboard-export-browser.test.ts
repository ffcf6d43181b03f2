import { readFile } from "node:fs/promises";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumOrSkip } from "../support/dashboard/browser.js";
import { open, signIn } from "../support/dashboard/dashboard-page.js";
import { startTestService, type TestService } from "../support/service/service.js";

// The players page's cohort CSV: players/export streamed into a file of one row a player, in one click.

const browserPath = chromiumOrSkip();
const PLAYERS = 1_200;

let svc: TestService;
let browser: Browser;
let page: Page;
let project: Awaited<ReturnType<TestService["createProject"]>>;
const requests: { url: string; key: string | undefined }[] = [];

/** A CSV's rows as cells (RFC 4180: quoted cells may hold commas, quotes doubled). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '"' && text[i + 1] === '"') {
      cell += '"';
      i++;
    } else if (c === '"') {
      quoted = !quoted;
    } else if (!quoted && c === ",") {
      row.push(cell);
      cell = "";
    } else if (!quoted && c === "\n") {
      rows.push([...row, cell]);
      row = [];
      cell = "";
    } else {
      cell += c;
    }
  }
  return rows;
}

/** The rows the CSV should hold: the export's lines over /v1, each profile's fields in the CSV's columns. */
async function exportRows(body: object): Promise<string[][]> {
  const res = await fetch(`${svc.baseUrl}/v1/players/export`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": project.privateKey },
    body: JSON.stringify(body),
  });
  expect(res.headers.get("content-type")).toBe("application/x-ndjson");
  const lines = (await res.text()).trimEnd().split("\n");
  return lines.map((line) => {
    const p = JSON.parse(line).player;
    const text = (value: unknown) => (value === null ? "" : String(value));
    return [
      p.identity_key,
      text(p.partner_user_id),
      text(p.device_id),
      text(p.platform_user_id),
      String(p.linked),
      p.tags.join(" "),
      JSON.stringify(p.traits),
      p.first_seen_at,
      p.last_seen_at,
    ];
  });
}

describe.skipIf(!browserPath)("the players page's cohort CSV in Chromium", () => {
  beforeAll(async () => {
    svc = await startTestService();
    project = await svc.createProject("Export Game");
    const players = Array.from({ length: PLAYERS }, (_, i) => ({
      // Commas and quotes in cells: a comma alone, a quote alone.
      partner_user_id: i % 10 === 0 ? `p${i}, x` : i % 10 === 2 ? `p${i} "q"` : `p${i}`,
      tags: i % 2 === 0 ? ["vip"] : ["team_a"],
      traits: { level: i % 5, name: `name, ${i}` },
    }));
    for (let i = 0; i < players.length; i += 100) {
      await svc.postOk("/v1/players/update", { players: players.slice(i, i + 100) }, project.publicKey);
    }
    browser = await chromium.launch({ executablePath: browserPath, args: ["--no-sandbox"] });
    page = await browser.newPage({ viewport: { width: 1200, height: 900 }, acceptDownloads: true });
    page.on("request", (request) => requests.push({ url: request.url(), key: request.headers()["x-api-key"] }));
    await page.goto(`${svc.baseUrl}/dashboard`);
    await signIn(page, project.privateKey);
  });
  afterAll(async () => {
    await browser?.close();
    await svc?.stop();
  });

  it("downloads the search's cohort, a row a player equal to players/export, the key in a header only", async () => {
    await open(page, "players");
    await page.fill('form.search input[name="tags"]', "VIP");
    const download = page.waitForEvent("download");
    await page.click('.cohort-actions button[name="csv"]');
    expect((await download).suggestedFilename()).toBe("players.csv");
    const rows = parseCsv(await readFile((await (await download).path())!, "utf8"));
    expect(rows[0]).toEqual([
      "identity_key",
      "partner_user_id",
      "device_id",
      "platform_user_id",
      "linked",
      "tags",
      "traits",
      "first_seen_at",
      "last_seen_at",
    ]);
    const expected = await exportRows({ tags: ["VIP"] });
    expect(expected).toHaveLength(PLAYERS / 2);
    expect(rows.slice(1)).toEqual(expected);
    await expect.poll(() => page.textContent(".cohort-actions .status")).toBe(`${PLAYERS / 2} players exported`);
    const exports = requests.filter((request) => request.url.endsWith("/v1/players/export"));
    expect(exports).toEqual([{ url: `${svc.baseUrl}/v1/players/export`, key: project.privateKey }]);
  });

  it("shows the service's refusal for a bad filter and downloads nothing", async () => {
    await page.fill('form.search input[name="tags"]', "");
    await page.fill('form.search textarea[name="traits"]', "_bad=1");
    await page.click('.cohort-actions button[name="csv"]');
    await expect.poll(() => page.textContent(".cohort-actions .status")).toMatch(/^invalid_argument: traits/);
  });
});
