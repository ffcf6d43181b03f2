import { chromium, type Browser, type Page, type Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumOrSkip } from "../support/dashboard/browser.js";
import { apply, BUSY_DONE, open, signIn } from "../support/dashboard/dashboard-page.js";
import { eventTimes, queueOf, waitFor } from "../support/service/events.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

// The states every page shows: an empty project, a refused filter, a slow answer, a revoked key and a stopped
// service; the numbers shown are always the answer to what the form asks, or none.

const browserPath = chromiumOrSkip();

let svc: TestService;
let stopped = false;
let browser: Browser;
let page: Page;
/** The private key of a project with events, signed in again once the revoked key's test is done. */
let withEvents: string;

const statusOf = () => page.textContent(".status:not(:empty)");

describe.skipIf(!browserPath)("dashboard states in Chromium", () => {
  beforeAll(async () => {
    svc = await startTestService();
    browser = await chromium.launch({ executablePath: browserPath, args: ["--no-sandbox"] });
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  });
  afterAll(async () => {
    await browser?.close();
    if (!stopped) await svc?.stop();
  });

  it("a new project: every page says what to send, and offers no download", async () => {
    const empty = await svc.createProject("Empty Game");
    await page.goto(`${svc.baseUrl}/dashboard`);
    await signIn(page, empty.privateKey);
    for (const name of ["overview", "retention", "trends", "events"]) {
      await open(page, name);
      await page.waitForSelector(BUSY_DONE, { state: "attached" });
      expect(await page.textContent(".status.empty"), name).toMatch(/^No events in these dates .*POST \/v1\/events/);
      expect(await page.locator(".content table, .content canvas, button[name=csv]").count(), name).toBe(0);
    }
    await open(page, "tags");
    await page.waitForSelector(".status.empty");
    expect(await page.textContent(".status.empty")).toContain("players/update");
    await page.click('button[name="sign-out"]');
  });

  it("a refused filter shows the service's message, and the numbers before it are cleared", async () => {
    const project = await svc.createProject("States Game");
    const [yesterday] = eventTimes(svc, 2);
    await svc.postOk(
      "/v1/events",
      { events: [{ name: "login", partner_user_id: "p1", timestamp: yesterday.timestamp }] },
      project.publicKey,
    );
    const players = Array.from({ length: 45 }, (_, i) => ({
      partner_user_id: `p${String(i).padStart(2, "0")}`,
      traits: { level: i },
    }));
    await svc.postOk("/v1/players/update", { players }, project.privateKey);
    await waitFor(
      () => queueOf(svc),
      (queue) => queue.queue_depth === 0,
      60_000,
    );
    await signIn(page, project.privateKey);
    await open(page, "retention");
    await page.waitForSelector(".heat-map");
    await page.fill('input[name="start_name"]', "not a name!");
    await apply(page, "events/retention");
    expect(await page.textContent(".status.error")).toMatch(/^invalid_argument: .*start_name/);
    expect(await page.locator(".heat-map").count()).toBe(0);
    expect(await page.getAttribute(".status.error", "role")).toBe("alert");
    await page.fill('input[name="start_name"]', "");
    await apply(page, "events/retention");
    expect(await page.locator(".heat-map").count()).toBe(1);
    withEvents = project.privateKey;
  });

  it("a slow answer: loading shown, Apply disabled, the numbers dimmed until it comes", async () => {
    await open(page, "trends");
    await page.waitForSelector(".trends-table");
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route("**/v1/events/trends", async (route: Route) => {
      await held;
      await route.continue();
    });
    await page.click('form.controls button[type="submit"]');
    expect(await page.textContent(".status.loading")).toBe("Loading…");
    expect(await page.isDisabled('form.controls button[type="submit"]')).toBe(true);
    expect(await page.getAttribute(".content", "aria-busy")).toBe("true");
    release();
    await page.waitForSelector(BUSY_DONE, { state: "attached" });
    await page.unroute("**/v1/events/trends");
    expect(await page.isEnabled('form.controls button[type="submit"]')).toBe(true);
    expect(await page.locator(".trends-table").count()).toBe(1);
    expect(await page.locator(".status.loading").count()).toBe(0);
  });

  it("only the last request's answer is drawn: a page asked for before it never shows", async () => {
    await open(page, "players");
    await page.waitForSelector(".search-table");
    const firstOf = () => page.textContent(".search-table tbody tr:first-child td:first-child");
    expect(await firstOf()).toBe("p00");
    await page.click('button[name="next"]');
    await expect.poll(firstOf).toBe("p20");
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const thirdPageAnswered = page.waitForResponse((res) => res.url().endsWith("/v1/players/search"));
    // The handler returns at once: Playwright hands a page's requests to it one after the other.
    await page.route("**/v1/players/search", async (route: Route) => {
      if (route.request().postDataJSON().page !== 3) return route.continue();
      void held.then(() => route.continue()).catch(() => undefined);
    });
    await page.click('button[name="next"]');
    await page.click('button[name="previous"]');
    await page.waitForSelector(BUSY_DONE, { state: "attached" });
    release();
    await thirdPageAnswered.catch(() => undefined);
    await page.unroute("**/v1/players/search");
    // Page 3's request was cancelled or came late: page 1, asked for last, is what shows.
    expect(await firstOf()).toBe("p00");
    expect(await page.textContent(".pager")).toContain("page 1 of 3 (45 players)");
  });

  it("a revoked key leads back to sign-in with the service's message, the key forgotten", async () => {
    const project = await svc.createProject("Revoked Game");
    const reader = await svc.createKey("reader", project.projectId);
    await page.click('button[name="sign-out"]');
    await signIn(page, reader.key);
    await open(page, "trends");
    await page.waitForSelector(BUSY_DONE, { state: "attached" });
    await svc.postOk("/v1/admin/api_keys/revoke", { key_id: reader.keyId }, ADMIN_KEY);
    await page.click('form.controls button[type="submit"]');
    await page.waitForSelector(".sign-in");
    expect(await statusOf()).toMatch(/^unauthenticated: .*Sign in again\.$/);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it("a service stopped mid-use: unreachable, and the numbers cleared", async () => {
    await signIn(page, withEvents);
    await open(page, "trends");
    await page.waitForSelector(".trends-table");
    await svc.stop();
    stopped = true;
    await page.click('form.controls button[type="submit"]');
    await page.waitForSelector(".status.error");
    expect(await page.textContent(".status.error")).toMatch(/^unreachable: the service did not answer/);
    expect(await page.locator(".trends-table, .chart").count()).toBe(0);
    expect(await page.isEnabled('form.controls button[type="submit"]')).toBe(true);
  });
});
