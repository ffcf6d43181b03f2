import { mkdir } from "node:fs/promises";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumOrSkip } from "../support/dashboard/browser.js";
import { BUSY_DONE, open, rowsOf, SCREENSHOTS, screenshot, signIn } from "../support/dashboard/dashboard-page.js";
import { experimentFixture } from "../support/service/experiment-fixture.js";
import { startTestService, type TestService } from "../support/service/service.js";

// The config and experiments pages against the API's answers: what the forms save is what the API then lists,
// the tables show what it answers, a refused save shows the service's message, and a reader key only reads.

const browserPath = chromiumOrSkip();

let svc: TestService;
let browser: Browser;
let page: Page;
let project: Awaited<ReturnType<TestService["createProject"]>>;
const api = (route: string, body: object) => svc.postOk(`/v1/${route}`, body, project.privateKey);
/** The cells of a table's body rows, without the last (the buttons) column. */
const shown = async (selector: string) => (await rowsOf(page, `${selector} tbody`)).map((row) => row.slice(0, -1));

describe.skipIf(!browserPath)("dashboard config and experiments in Chromium", () => {
  beforeAll(async () => {
    svc = await startTestService();
    project = await svc.createProject("Config Game");
    await mkdir(SCREENSHOTS, { recursive: true });
    browser = await chromium.launch({ executablePath: browserPath, args: ["--no-sandbox"] });
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    await page.goto(`${svc.baseUrl}/dashboard`);
    await signIn(page, project.privateKey);
  });
  afterAll(async () => {
    await browser?.close();
    await svc?.stop();
  });

  it("config: says what to do when empty, and saves a new entry with its rules as the API then lists it", async () => {
    await open(page, "config");
    await page.waitForSelector(".status.empty");
    expect(await page.textContent(".status.empty")).toContain("config/update");

    await page.click('button[name="new-entry"]');
    await page.fill('.config-editor input[name="key"]', "shop");
    await page.fill('.config-editor textarea[name="default_value"]', '{"layout":"plain"}');
    await page.check('.config-editor input[name="in_launch"]');
    await page.click('.config-editor button[name="add-rule"]');
    await page.click('.config-editor button[name="add-rule"]');
    const rules = page.locator(".config-editor .rule");
    await rules.nth(0).locator('input[name="tags"]').fill("VIP, whales");
    await rules.nth(0).locator('select[name="tags_match"]').selectOption("all");
    await rules.nth(0).locator('textarea[name="traits"]').fill("tier=gold\nlevel=5");
    await rules.nth(0).locator('input[name="rollout_percent"]').fill("12.5");
    await rules.nth(0).locator('textarea[name="value"]').fill('{"layout":"gold"}');
    await rules.nth(1).locator('input[name="tags_none"]').fill("churned");
    await rules.nth(1).locator('textarea[name="value"]').fill('"b"');
    await page.click('.config-editor button[type="submit"]');
    await page.waitForSelector(".config-table");

    const [entry] = (await api("config/list", {})).entries;
    expect(entry).toMatchObject({
      key: "shop",
      default_value: { layout: "plain" },
      rules: [
        {
          tags: ["vip", "whales"],
          tags_match: "all",
          tags_none: [],
          traits: { tier: "gold", level: 5 },
          rollout_percent: 12.5,
          value: { layout: "gold" },
        },
        { tags: [], tags_none: ["churned"], traits: {}, rollout_percent: null, value: "b" },
      ],
      in_launch: true,
      version: 1,
    });
    expect(await shown(".config-table")).toEqual([["shop", '{"layout":"plain"}', "2", "yes", "1", entry.updated_at]]);
    await screenshot(page, "config");
  });

  it("config: edits an entry shown with its rules, restores an earlier version, and shows a refused save's message", async () => {
    await page.click('.config-table button.edit[data-key="shop"]');
    // The editor shows the rules as the API answered them.
    const first = page.locator(".config-editor .rule").nth(0);
    expect(await first.locator('input[name="tags"]').inputValue()).toBe("vip, whales");
    expect(await first.locator('textarea[name="traits"]').inputValue()).toBe("tier=gold\nlevel=5");
    await screenshot(page, "config-editor");
    await page.fill('.config-editor textarea[name="default_value"]', "42");
    await page.click(".config-editor .rule >> nth=1 >> button[name=remove-rule]");
    await page.click('.config-editor button[type="submit"]');
    await expect.poll(async () => (await shown(".config-table"))[0]?.slice(1, 5)).toEqual(["42", "1", "yes", "2"]);

    await page.click('.config-table button.history[data-key="shop"]');
    await page.waitForSelector(".history-table");
    const history = (await api("config/history", { key: "shop" })).versions;
    expect((await rowsOf(page, ".history-table tbody")).map((row) => row.slice(0, 6))).toEqual(
      history.map((v: any) => [
        String(v.version),
        v.updated_at,
        v.key_id,
        JSON.stringify(v.entry.default_value),
        String(v.entry.rules.length),
        "yes",
      ]),
    );
    await page.click('.history-table button[name="restore"][data-version="1"]');
    await expect
      .poll(async () => (await shown(".config-table"))[0]?.slice(1, 5))
      .toEqual(['{"layout":"plain"}', "2", "yes", "3"]);
    expect((await api("config/list", {})).entries[0]).toMatchObject({ version: 3, default_value: { layout: "plain" } });

    await page.click('button[name="new-entry"]');
    await page.fill('.config-editor input[name="key"]', "bad key");
    await page.fill('.config-editor textarea[name="default_value"]', "1");
    await page.click('.config-editor button[type="submit"]');
    await expect.poll(() => page.textContent(".config-editor .status.error")).toMatch(/^invalid_argument: key: /);
    await page.fill('.config-editor input[name="key"]', "good_key");
    await page.fill('.config-editor textarea[name="default_value"]', "not json");
    await page.click('.config-editor button[type="submit"]');
    await expect.poll(() => page.textContent(".config-editor .status.error")).toMatch(/default_value: not JSON/);
    expect((await api("config/list", {})).entries).toHaveLength(1);
  });

  it("experiments: creates one with variants, weights and eligibility, runs and stops it, as the API then lists it", async () => {
    await open(page, "experiments");
    await page.waitForSelector(".status.empty");
    await page.click('button[name="new-experiment"]');
    await page.fill('.experiment-editor input[name="name"]', "onboarding");
    await page.click('.experiment-editor button[name="add-variant"]');
    const variants = page.locator(".experiment-editor .variant");
    await variants.nth(2).locator('input[name="variant-name"]').fill("tutorial_b");
    await variants.nth(1).locator('input[name="weight"]').fill("2.5");
    await page.fill('.experiment-editor input[name="tags"]', "new_player");
    await page.selectOption('.experiment-editor select[name="state"]', "running");
    await page.click('.experiment-editor button[type="submit"]');
    await page.waitForSelector(".experiments-table");

    const listed = async () => (await api("experiments/list", {})).experiments;
    const [experiment] = await listed();
    expect(experiment).toMatchObject({
      name: "onboarding",
      variants: [
        { name: "control", weight: 1 },
        { name: "treatment", weight: 2.5 },
        { name: "tutorial_b", weight: 1 },
      ],
      control: "control",
      tags: ["new_player"],
      state: "running",
    });
    expect(await shown(".experiments-table")).toEqual([
      [
        "onboarding",
        "running",
        "control (1), treatment (2.5), tutorial_b (1)",
        "control",
        "tags (any): new_player",
        experiment.updated_at,
      ],
    ]);
    await screenshot(page, "experiments");

    await page.click('.experiments-table button.stop[data-name="onboarding"]');
    await expect.poll(async () => (await listed())[0].state).toBe("stopped");
    await expect.poll(async () => (await shown(".experiments-table"))[0]?.[1]).toBe("stopped");
    // A refused change (a variant renamed once it has run) shows the service's message.
    await page.click('.experiments-table button.edit[data-name="onboarding"]');
    await variants.nth(2).locator('input[name="variant-name"]').fill("renamed");
    await page.click('.experiment-editor button[type="submit"]');
    await expect
      .poll(() => page.textContent(".experiment-editor .status.error"))
      .toMatch(/^invalid_argument: variants: /);
  });

  it("experiments: shows an experiment's results for a chosen metric as the API answers them, and the ratio warning", async () => {
    const fixture = await experimentFixture(svc, { seed: 5, groups: [{ daysAgo: 4, players: 24 }] });
    await page.click('button[name="sign-out"]');
    await signIn(page, fixture.privateKey);
    await open(page, "experiments");
    await page.click('.experiments-table button.results[data-name="exp"]');
    await page.selectOption('.results-form select[name="metric-kind"]', "event");
    await page.fill('.results-form input[name="metric-days"]', "2");
    await page.fill('.results-form input[name="metric-name"]', "buy");
    const figure = (value: number | null) =>
      value === null ? "–" : value.toLocaleString("en-US", { maximumFractionDigits: 4 });
    const expected = async () => {
      const metric = { kind: "event", days: 2, name: "buy" };
      const answer = await svc.postOk("/v1/experiments/results", { name: "exp", metric }, fixture.privateKey);
      return {
        warning: answer.sample_ratio.warning,
        rows: answer.variants.map((one: any) => [
          one.variant === answer.control ? `${one.variant} (control)` : one.variant,
          String(one.exposed),
          String(one.measured),
          figure(one.value),
          figure(one.difference),
          one.ci_low === null ? "–" : `${figure(one.ci_low)} to ${figure(one.ci_high)}`,
          figure(one.p_value),
        ]),
        ratio: figure(answer.sample_ratio.p_value),
      };
    };
    const showResults = async () => {
      const answered = page.waitForResponse((res) => res.url().endsWith("/v1/experiments/results"));
      await page.click('.results-form button[type="submit"]');
      await answered;
      await page.waitForSelector('.experiment-results .content[aria-busy="false"] .results-table');
    };
    await showResults();
    const even = await expected();
    expect(even.warning).toBe(false);
    expect(await rowsOf(page, ".results-table tbody")).toEqual(even.rows);
    expect(await page.textContent(".sample-ratio")).toContain(`p = ${even.ratio}`);
    expect(await page.locator(".sample-ratio.warning").count()).toBe(0);
    await screenshot(page, "experiment-results");

    // Weights far from the split the exposures followed: the page warns.
    const variants = ["a", "b", "c"].map((name, i) => ({ name, weight: i === 0 ? 30 : 1 }));
    await svc.postOk("/v1/experiments/update", { name: "exp", variants, state: "running" }, fixture.privateKey);
    await showResults();
    const skewed = await expected();
    expect(skewed.warning).toBe(true);
    await page.waitForSelector(".sample-ratio.warning");
    expect(await page.textContent(".sample-ratio.warning")).toContain(`p = ${skewed.ratio}`);
    expect(await rowsOf(page, ".results-table tbody")).toEqual(skewed.rows);
  }, 120_000);

  it("a reader key reads both pages and is offered no change", async () => {
    const reader = await svc.createKey("reader", project.projectId);
    await page.click('button[name="sign-out"]');
    await signIn(page, reader.key);
    for (const [name, table] of [
      ["config", ".config-table"],
      ["experiments", ".experiments-table"],
    ]) {
      await open(page, name);
      await page.waitForSelector(table);
      await page.waitForSelector(BUSY_DONE, { state: "attached" });
      expect(await page.textContent(".note"), name).toContain("private key");
      expect(await page.locator("button.edit, button.stop, button.run, button[name^=new-]").count(), name).toBe(0);
    }
  });
});
