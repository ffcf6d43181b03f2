import { readFile } from "node:fs/promises";
import { mkdir } from "node:fs/promises";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumOrSkip } from "../support/dashboard/browser.js";
import {
  apply,
  BUSY_DONE,
  open as openPage,
  rowsOf as rowsIn,
  SCREENSHOTS,
  screenshot as shoot,
} from "../support/dashboard/dashboard-page.js";
import { logLines } from "../support/log-lines.js";
import { queueOf, waitFor } from "../support/service/events.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

// The pages' numbers against the API on a small project with exact counts (dashboard-kpis-browser.test.ts has the
// producer's pages on realistic data, dashboard-states-browser.test.ts the loading, empty and error states).

const browserPath = chromiumOrSkip();
const DAY_MS = 86_400_000;
const PLAYERS = 50;

let svc: TestService;
let browser: Browser;
let page: Page;
let project: Awaited<ReturnType<TestService["createProject"]>>;
/** What the service logs at trace level: no key may appear in it. */
const serviceLog = logLines();
const requestedUrls: string[] = [];

const api = async (route: string, body: object, key = project.privateKey) => {
  const res = await svc.postJson(route, body, key);
  if (res.status !== 200) throw new Error(`${route}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
};
const rowsOf = (selector: string) => rowsIn(page, selector);
const open = (name: string) => openPage(page, name);

/** The trends table the page should show for the filters its form holds now, from the API. */
async function expectedTrendsTable(request: object, metric: "events" | "players") {
  const from = await page.inputValue('input[name="from"]');
  const to = await page.inputValue('input[name="to"]');
  const answer = await api("/v1/events/trends", { from, to, interval: "day", ...request });
  const series: { name: string; tag: string | null; points: { date: string; events: number; players: number }[] }[] =
    answer.series;
  expect(series.length).toBeGreaterThan(0);
  return [
    ["date", ...series.map((s) => `${s.name} · ${s.tag ?? "everyone"}`)],
    ...series[0].points.map((point, i) => [point.date, ...series.map((s) => String(s.points[i][metric]))]),
  ];
}

/** Until the page's trends table is the API's answer: the page draws it after the response has come. */
async function expectTrendsTable(...args: Parameters<typeof expectedTrendsTable>): Promise<void> {
  const expected = await expectedTrendsTable(...args);
  await expect.poll(() => rowsOf(".trends-table")).toEqual(expected);
}

const applyTrends = () => apply(page, "events/trends");

describe.skipIf(!browserPath)("dashboard in Chromium", () => {
  beforeAll(async () => {
    svc = await startTestService({ LOG_LEVEL: "trace" }, { logDestination: serviceLog.destination });
    project = await api(
      "/v1/admin/projects",
      { name: "Dashboard Game", game_id: 900_000 + (process.pid % 90_000) },
      ADMIN_KEY,
    ).then((body) => ({
      projectId: body.project.project_id,
      gameId: body.project.game_id,
      privateKey: body.private_key,
      publicKey: body.public_key,
    }));
    // Even players are vip, every third one team_a; tiers alternate.
    const players = Array.from({ length: PLAYERS }, (_, i) => ({
      partner_user_id: `p${String(i).padStart(2, "0")}`,
      tags: [...(i % 2 === 0 ? ["vip"] : []), ...(i % 3 === 0 ? ["team_a"] : [])],
      traits: { tier: i % 2 === 0 ? "gold" : "silver", level: i % 5 },
    }));
    await api("/v1/players/update", { players }, project.publicKey);
    // Events minutes and days before the service's now: logins on three days, purchases by the vips.
    const now = svc.clock.now().getTime();
    const events = players.flatMap((player, i) => [
      // Two logins a day back: events and distinct players differ.
      ...[1, 1, 2, 3].map((days, n) => ({
        name: "login",
        partner_user_id: player.partner_user_id,
        timestamp: new Date(now - days * DAY_MS - (i + 1 + n * 60) * 60_000).toISOString(),
      })),
      ...(i % 2 === 0
        ? [
            {
              name: "purchase",
              partner_user_id: player.partner_user_id,
              timestamp: new Date(now - 2 * DAY_MS - 30 * 60_000).toISOString(),
            },
          ]
        : []),
    ]);
    await api("/v1/events", { events }, project.publicKey);
    await waitFor(
      () => queueOf(svc),
      (queue) => queue.queue_depth === 0,
      120_000,
    );

    await mkdir(SCREENSHOTS, { recursive: true });
    browser = await chromium.launch({ executablePath: browserPath, args: ["--no-sandbox"] });
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    page.on("request", (request) => requestedUrls.push(request.url()));
    await page.goto(`${svc.baseUrl}/dashboard`);
  });
  afterAll(async () => {
    await browser?.close();
    await svc?.stop();
  });

  it("shows the service's error for a wrong key and keeps no key", async () => {
    await page.fill('input[name="api-key"]', "sk_not_a_key_of_this_service");
    await page.click('.sign-in button[type="submit"]');
    await expect.poll(() => page.textContent(".sign-in .status")).toBe("unauthenticated: unknown or revoked API key");
    await shoot(page, "sign-in");
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it("signs in; the trends chart's numbers are the API's, for every filter", async () => {
    await page.fill('input[name="api-key"]', project.privateKey);
    await page.click('.sign-in button[type="submit"]');
    // The header names the project signed into (project/get).
    await expect.poll(() => page.textContent("header .project")).toBe("Dashboard Game");
    await open("trends");
    await page.waitForSelector(".trends-table");
    await expectTrendsTable({}, "events");
    expect(await page.locator(".chart canvas").count()).toBe(1);
    await page.selectOption('select[name="layout"]', "each");
    await applyTrends();
    expect(await page.locator(".chart canvas").count()).toBe(2);

    // Split by tags, distinct players, vip or team_a players of tier gold.
    await page.fill('input[name="tags"]', "vip, Team A");
    await page.fill('textarea[name="traits"]', "tier=gold");
    await page.check('input[name="split"]');
    await page.selectOption('select[name="metric"]', "players");
    await applyTrends();
    const filtered = { tags: ["vip", "Team A"], tags_match: "any", traits: { tier: "gold" }, split_by: "tags" };
    await expectTrendsTable(filtered, "players");
    expect(await page.locator(".chart .u-legend").first().textContent()).toContain("team_a");

    // A download of the same numbers.
    const download = page.waitForEvent("download");
    await page.click('button[name="csv"]');
    expect((await download).suggestedFilename()).toBe("trends.csv");
  });

  it("filters by tags_none and shows how fresh the events are", async () => {
    await page.fill('input[name="tags"]', "");
    await page.fill('textarea[name="traits"]', "");
    await page.fill('input[name="tags_none"]', "vip");
    await page.uncheck('input[name="split"]');
    await page.selectOption('select[name="metric"]', "events");
    await applyTrends();
    await expectTrendsTable({ tags_none: ["vip"] }, "events");
    expect(await page.textContent(".freshness")).toMatch(/^Events up to \d+ s ago/);
    await page.fill('input[name="tags_none"]', "");
  });

  it("edits a tag's metadata, which the API then answers, and shows a refused edit's error inline", async () => {
    await open("tags");
    await page.waitForSelector(".tags-table");
    await page.click('button.edit[data-tag="vip"]');
    await page.fill('.tag-editor input[name="label"]', "VIP players");
    await page.fill('.tag-editor input[name="category"]', "Segments");
    await page.click('.tag-editor button[type="submit"]');
    await expect.poll(() => page.locator(".tags-table").textContent()).toContain("VIP players");
    const listed = await api("/v1/players/tags", { text: "vip" });
    expect(listed.tags[0]).toMatchObject({ tag: "vip", label: "VIP players", category: "Segments", players_count: 25 });

    await page.click('button.edit[data-tag="team_a"]');
    await page.fill('.tag-editor input[name="label"]', " ");
    await page.click('.tag-editor button[type="submit"]');
    await expect
      .poll(() => page.locator(".tag-editor .status.error").first().textContent())
      .toMatch(/^invalid_argument: .*label/);
  });

  it("lists the API's trait keys and materialises a listed one with its switch", async () => {
    const apiRows = async () => {
      const answer = await api("/v1/players/traits", { page: 1, page_size: 50 });
      return answer.traits.map((trait: { key: string; materialised: boolean }) => [trait.key, trait.materialised]);
    };
    const pageRows = async () =>
      (await rowsOf(".traits-table tbody")).map(([key, state]) => [key, !state.startsWith("not")]);
    await open("traits");
    await expect.poll(pageRows).toEqual([
      ["level", false],
      ["tier", false],
    ]);
    expect(await pageRows()).toEqual(await apiRows());

    await page.click('button[name="materialise"][data-key="tier"]');
    await expect.poll(pageRows).toEqual([
      ["level", false],
      ["tier", true],
    ]);
    expect(await pageRows()).toEqual(await apiRows());
    // A materialised key's sets are written as its players are: ready at once.
    const { traits } = await api("/v1/players/traits", { page: 1, page_size: 50 });
    expect(traits.find((trait: { key: string }) => trait.key === "tier")).toMatchObject({
      materialised: true,
      ready: true,
    });
    expect(await page.locator('button[data-key="tier"]').count()).toBe(0);
  });

  it("looks a player up and pages a search through the API's players in its order", async () => {
    await open("players");
    await page.fill('input[name="id"]', "p03");
    await page.click('form.lookup button[type="submit"]');
    await expect.poll(() => page.locator(".player .tags").textContent()).toBe("team_a");
    await page.fill('form.search input[name="tags"]', "vip");
    await page.click('form.search button[type="submit"]');
    for (const pageNumber of [1, 2]) {
      if (pageNumber === 2) await page.click('button[name="next"]');
      await expect.poll(() => page.locator(".pager").textContent()).toContain(`page ${pageNumber} of 2 (25 players)`);
      const shown = (await rowsOf(".search-table")).slice(1).map((row) => row[0]);
      const answer = await api("/v1/players/search", {
        tags: ["vip"],
        tags_match: "any",
        page: pageNumber,
        page_size: 20,
      });
      expect(shown).toEqual(answer.players.map((player: any) => player.partner_user_id));
    }
    // A row opens the player's page, whose URL names the player.
    await page.click('.search-table a:text("p40")');
    await expect.poll(() => page.locator(".player .tags").textContent()).toBe("vip");
    expect(page.url()).toContain("#players?by=partner_user_id&id=p40");
    // The player's events per day and name, as players/data answers their kept events.
    const [, ...lines] = await api("/v1/players/data", { partner_user_id: "p40" });
    const perDay = new Map<string, number>();
    for (const { event } of lines) {
      const key = `${event.timestamp.slice(0, 10)} ${event.name}`;
      perDay.set(key, (perDay.get(key) ?? 0) + 1);
    }
    const expected = [...perDay].sort(([a], [b]) => (a < b ? 1 : -1)).map(([key, n]) => [...key.split(" "), String(n)]);
    await expect.poll(async () => (await rowsOf(".player-events-table")).slice(1)).toEqual(expected);
    expect(expected.length).toBeGreaterThan(1);
  });

  it("downloads a player's data and erases the player after a confirmation", async () => {
    await page.fill('input[name="id"]', "p49");
    await page.click('form.lookup button[type="submit"]');
    await page.waitForSelector('button[name="delete-player"]');
    const download = page.waitForEvent("download");
    await page.click('button[name="download-data"]');
    const lines = (await readFile((await (await download).path())!, "utf8"))
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines[0].profile.partner_user_id).toBe("p49");
    expect(lines).toEqual(await api("/v1/players/data", { partner_user_id: "p49" }));
    expect(
      lines
        .slice(1)
        .map((line) => line.event.name)
        .sort(),
    ).toEqual(["login", "login", "login", "login"]);
    // Dismissed: nothing happens; accepted: the player is erased.
    page.once("dialog", (dialog) => void dialog.dismiss());
    await page.click('button[name="delete-player"]');
    expect((await api("/v1/players/get", { partner_user_id: "p49" })).found).toBe(true);
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click('button[name="delete-player"]');
    await expect.poll(() => page.textContent(".player-actions .status")).toMatch(/^Erased /);
    expect((await api("/v1/players/get", { partner_user_id: "p49" })).found).toBe(false);
  });

  it("shows the queue and the range's event names with the API's counts", async () => {
    await open("events");
    await page.waitForSelector(".names-table");
    expect(await page.textContent(".queue")).toMatch(/^Queue: 0 events waiting/);
    await page.waitForSelector(BUSY_DONE, { state: "attached" });
    const from = await page.inputValue('input[name="from"]');
    const to = await page.inputValue('input[name="to"]');
    const answer = await api("/v1/events/names", { from, to });
    expect((await rowsOf(".names-table")).slice(1)).toEqual(answer.names.map((n: any) => [n.name, String(n.events)]));
  });

  it("admin: creates a project and shows its keys once", async () => {
    await page.click('button[name="sign-out"]');
    await page.fill('input[name="api-key"]', ADMIN_KEY);
    await page.click('.sign-in button[type="submit"]');
    const form = page.locator('form[data-path="admin/projects"]');
    await form.locator('input[name="name"]').fill("Another Game");
    await form.locator('input[name="game_id"]').fill(String(project.gameId + 1));
    await form.locator('button[type="submit"]').click();
    await expect.poll(() => form.locator(".answer").textContent()).toContain('"private_key": "sk_');
  });

  it("never puts a key in a URL, in localStorage, or in the service's log", async () => {
    const keys = [project.privateKey, ADMIN_KEY];
    expect(requestedUrls.length).toBeGreaterThan(10);
    for (const url of [...requestedUrls, page.url()]) for (const key of keys) expect(url).not.toContain(key);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    const log = serviceLog.lines.join("");
    expect(log).toContain('"rpc"');
    for (const key of keys) expect(log).not.toContain(key);
  });
});
