import { mkdir } from "node:fs/promises";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumOrSkip } from "../support/dashboard/browser.js";
import { sendRealisticData } from "../support/dashboard/dashboard-data.js";
import {
  apply,
  BUSY_DONE,
  formatted,
  open,
  rangeOf,
  rowsOf,
  SCREENSHOTS,
  screenshot,
  signIn,
  withinOneDay,
} from "../support/dashboard/dashboard-page.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

// The producer's pages on realistic data (30 days, 15 names, 24 tags), read with a reader key: each figure is the
// API's for the same filters; the layout at 390 px; the URL round trip; keyboard use; the committed screenshots.

const browserPath = chromiumOrSkip();
const DAY_MS = 86_400_000;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

let svc: TestService;
let browser: Browser;
let page: Page;
let project: Awaited<ReturnType<TestService["createProject"]>>;
let readerKey: string;
const api = (route: string, body: object) => svc.postOk(`/v1/${route}`, body, project.privateKey);
const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

describe.skipIf(!browserPath)("dashboard KPIs in Chromium", () => {
  beforeAll(async () => {
    svc = await startTestService();
    project = await svc.createProject("Realistic Game");
    await sendRealisticData(svc, project);
    readerKey = (await svc.createKey("reader", project.projectId)).key;
    await mkdir(SCREENSHOTS, { recursive: true });
    browser = await chromium.launch({ executablePath: browserPath, args: ["--no-sandbox"] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${svc.baseUrl}/dashboard`);
  }, 600_000);
  afterAll(async () => {
    await browser?.close();
    await svc?.stop();
  });

  it("overview: the range's figures and the period before's are the API's", async () => {
    await signIn(page, readerKey);
    await page.waitForSelector(".kpi");
    // Figures of days elapsed move at midnight: page and API compared within one day.
    await withinOneDay(async () => {
      await apply(page, "events/retention");
      const { from, to } = await rangeOf(page);
      const previousFrom = day(2 * Date.parse(from) - Date.parse(to) - DAY_MS);
      const both = { from: previousFrom, to };
      const active = (await api("events/active", both)).series[0].points;
      const cohorts = (await api("events/retention", { ...both, periods: 30 })).series[0].cohorts;
      const trends = (await api("events/trends", { ...both, sum: "amount" })).series;
      const during = active.filter((p: any) => p.date >= from);
      const newCohorts = cohorts.filter((c: any) => c.date >= from && c.returned.length > 1 && c.players > 0);
      const d1 = (100 * sum(newCohorts.map((c: any) => c.returned[1]))) / sum(newCohorts.map((c: any) => c.players));
      const points = trends.flatMap((s: any) => s.points).filter((p: any) => p.date >= from);
      const expected = {
        dau: formatted(sum(during.map((p: any) => p.dau)) / during.length, 1),
        mau: formatted(during.at(-1).mau, 1),
        new: formatted(sum(during.map((p: any) => p.new_players)), 1),
        d1: `${d1.toFixed(1)}%`,
        events: formatted(sum(points.map((p: any) => p.events)), 1),
        sum: sum(points.map((p: any) => p.sum ?? 0)).toLocaleString("en-US", {
          minimumFractionDigits: 2,
          maximumFractionDigits: 2,
        }),
      };
      for (const [key, value] of Object.entries(expected))
        expect(await page.textContent(`.kpi[data-kpi="${key}"] .value`), key).toBe(value);
      const previous = active.filter((p: any) => p.date < from);
      expect(await page.textContent('.kpi[data-kpi="new"] .previous')).toContain(
        `before: ${formatted(sum(previous.map((p: any) => p.new_players)), 1)}`,
      );
    });
    expect(await page.locator(".kpi .sparkline canvas").count()).toBeGreaterThanOrEqual(6);
    expect(await page.textContent(".page")).not.toContain("NaN");
    await screenshot(page, "overview");
  });

  it("retention: every heat-map cell is events/retention's, whole and split by chosen tags", async () => {
    await open(page, "retention");
    await page.waitForSelector(".heat-map");
    const heat = (tag: string) =>
      page.$$eval(`.heat[data-tag="${tag}"] tbody tr`, (rows) =>
        rows.map((row) => ({
          date: row.getAttribute("data-date"),
          players: Number(row.querySelector("td")!.dataset.players),
          returned: [...row.querySelectorAll("td[data-returned]")].map((cell) =>
            Number(cell.getAttribute("data-returned")),
          ),
        })),
      );
    // The cells of days elapsed grow at midnight: page and API compared within one day.
    await withinOneDay(async () => {
      await apply(page, "events/retention");
      const { from, to } = await rangeOf(page);
      const whole = await api("events/retention", { from, to, periods: 14 });
      expect(await heat("")).toEqual(whole.series[0].cohorts);
    });

    await page.selectOption('select[name="interval"]', "week");
    await page.selectOption('select[name="mode"]', "unbounded");
    await page.fill('input[name="periods"]', "4");
    await page.check('input[name="split"]');
    await page.fill('input[name="split_tags"]', "vip, whale");
    // Compared with the API's answer to what the page asked: a run across midnight moves the page's range.
    await withinOneDay(async () => {
      const asked = await apply(page, "events/retention");
      expect(asked).toMatchObject({ interval: "week", periods: 4, mode: "unbounded", tags: ["vip", "whale"] });
      expect(asked).toMatchObject({ split_by: "tags", ...(await rangeOf(page)) });
      const split = await api("events/retention", asked);
      expect(split.series.map((s: any) => s.tag)).toEqual(["vip", "whale"]);
      for (const series of split.series) expect(await heat(series.tag)).toEqual(series.cohorts);
    });
    await page.selectOption('select[name="interval"]', "day");
    await page.selectOption('select[name="mode"]', "n_day");
    await page.fill('input[name="periods"]', "14");
    await page.uncheck('input[name="split"]');
    await apply(page, "events/retention");
    await screenshot(page, "retention");
  });

  it("trends: chosen names on one chart by week; split by the top 20 tags in 20 colours with their labels", async () => {
    await open(page, "trends");
    await page.fill('input[name="names"]', "login, purchase");
    await page.selectOption('select[name="interval"]', "week");
    await page.selectOption('select[name="metric"]', "players");
    await apply(page, "events/trends");
    const { from, to } = await rangeOf(page);
    const answer = await api("events/trends", { from, to, interval: "week", names: ["login", "purchase"] });
    const expected = [
      ["date", ...answer.series.map((s: any) => `${s.name} · everyone`)],
      ...answer.series[0].points.map((p: any, i: number) => [
        p.date,
        ...answer.series.map((s: any) => formatted(s.points[i].players)),
      ]),
    ];
    expect(await rowsOf(page, ".trends-table")).toEqual(expected);
    expect(await page.locator(".chart canvas").count()).toBe(1);
    expect(await page.getAttribute(".chart .line-chart", "aria-label")).toBe("distinct players by date");

    await page.fill('input[name="names"]', "login");
    await page.selectOption('select[name="interval"]', "day");
    await page.check('input[name="split"]');
    await apply(page, "events/trends");
    const markers = await page.$$eval(".u-legend .u-marker", (items) =>
      items.map((item) => getComputedStyle(item).borderColor),
    );
    expect(markers.length).toBe(20);
    expect(new Set(markers).size).toBe(20);
    expect(await page.textContent(".u-legend")).toContain("VIP");
    await screenshot(page, "trends");
  });

  it("a view's filters round-trip through its URL, in a new tab after sign-in", async () => {
    await page.fill('input[name="names"]', "purchase");
    await page.selectOption('select[name="metric"]', "sum");
    await page.fill('input[name="sum"]', "amount");
    await page.uncheck('input[name="split"]');
    await page.fill('input[name="tags"]', "vip");
    // Chosen dates: a preset's move with the day, so across midnight the new tab would rightly show the next range.
    await page.selectOption('select[name="range"]', "custom");
    await apply(page, "events/trends");
    const shared = page.url();
    expect(shared).toContain("names=purchase");
    const table = await rowsOf(page, ".trends-table");
    const other = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await other.goto(shared);
    await signIn(other, readerKey);
    await other.waitForSelector(".trends-table");
    expect(await other.inputValue('input[name="names"]')).toBe("purchase");
    expect(await other.inputValue('select[name="metric"]')).toBe("sum");
    expect(await other.inputValue('input[name="tags"]')).toBe("vip");
    expect(await rangeOf(other)).toEqual(await rangeOf(page));
    expect(await rowsOf(other, ".trends-table")).toEqual(table);
    await other.close();
  });

  it("is used with the keyboard: navigation, Apply and sorting", async () => {
    await page.focus('nav a[href="#events"]');
    await page.keyboard.press("Enter");
    await page.waitForSelector(".names-table");
    await page.focus(".names-table th:nth-child(2) button");
    await page.keyboard.press("Enter");
    expect(await page.getAttribute(".names-table th:nth-child(2)", "aria-sort")).toBe("ascending");
    const counts = (await rowsOf(page, ".names-table tbody")).map((row) => Number(row[1].replaceAll(",", "")));
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    await page.keyboard.press("Enter");
    expect(await page.getAttribute(".names-table th:nth-child(2)", "aria-sort")).toBe("descending");
    await page.focus('select[name="range"]');
    await page.keyboard.press("Enter");
    expect(await page.isEnabled('form.controls button[type="submit"]')).toBe(true);
    await screenshot(page, "events");
  });

  it("fits 390 px on every page without scrolling sideways", async () => {
    const narrow = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await narrow.goto(`${svc.baseUrl}/dashboard`);
    await signIn(narrow, project.privateKey);
    for (const name of ["overview", "retention", "trends", "players", "tags", "traits", "events"]) {
      await open(narrow, name);
      await narrow.waitForSelector(BUSY_DONE, { state: "attached" });
      await expect
        .poll(() => narrow.evaluate(() => document.documentElement.scrollWidth), { message: name })
        .toBeLessThanOrEqual(390);
    }
    await narrow.close();
  });

  it("takes the pictures of players, tags, traits and admin", async () => {
    await open(page, "players");
    await page.click('.search-table a:text("player_003")');
    await page.waitForSelector(".player .tags");
    await page.waitForSelector(".player-events-table");
    await screenshot(page, "players");
    for (const name of ["tags", "traits"]) {
      await open(page, name);
      await page.waitForSelector(`${BUSY_DONE} table`);
      await screenshot(page, name);
    }
    await page.click('button[name="sign-out"]');
    await signIn(page, ADMIN_KEY);
    await page.waitForSelector(".projects-table");
    await screenshot(page, "admin");
  });

  it("admin: the lists are the API's; a key revoked and the signing key rotated from them", async () => {
    const projects = (await svc.postOk("/v1/admin/projects/list", { page: 1, page_size: 20 }, ADMIN_KEY)).projects;
    expect((await rowsOf(page, ".projects-table tbody")).map((row) => row[0])).toEqual(
      projects.map((p: any) => p.project_id),
    );
    const keys = page.locator('section[data-path="admin/api_keys/list"]');
    await keys.locator('input[name="project_id"]').fill(project.projectId);
    await apply(page, "admin/api_keys/list", 'section[data-path="admin/api_keys/list"] form');
    const listed = async () =>
      (await svc.postOk("/v1/admin/api_keys/list", { project_id: project.projectId }, ADMIN_KEY)).api_keys;
    const shown = () => rowsOf(page, ".api-keys-table tbody");
    expect((await shown()).map((row) => row.slice(0, 3))).toEqual(
      (await listed()).map((key: any) => [key.key_id, key.type, key.project_id]),
    );
    const reader = (await listed()).find((key: any) => key.type === "reader");
    await page.click(`button[name="revoke"][data-key-id="${reader.key_id}"]`);
    await expect.poll(async () => (await shown()).find((row) => row[0] === reader.key_id)?.[4]).toMatch(/ UTC$/);
    expect((await listed()).find((key: any) => key.key_id === reader.key_id).revoked_at).toBeTruthy();
    const rotate = page.locator('form[data-path="admin/signing_keys/rotate"]');
    await rotate.locator('button[type="submit"]').click();
    await expect.poll(() => rotate.locator(".answer").textContent()).toContain('"kid"');
  });
});
