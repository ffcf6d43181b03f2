import path from "node:path";
import type { Page } from "playwright-core";

/** Screenshots of each page; docs/dashboard/ holds a committed copy of each. */
export const SCREENSHOTS = path.resolve(import.meta.dirname, "../../../dist/dashboard-screenshots");

export const screenshot = (page: Page, name: string) =>
  page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

/** Signs in with `key` on the sign-in form. */
export async function signIn(page: Page, key: string): Promise<void> {
  await page.fill('input[name="api-key"]', key);
  await page.click('.sign-in button[type="submit"]');
  await page.waitForSelector("header .product");
}

/** Opens a page by its link in the navigation. */
export async function open(page: Page, name: string): Promise<void> {
  await page.click(`nav a[href="#${name}"]`);
  await page.waitForSelector(`.page[data-page="${name}"]`);
}

/** Each row of the tables matching `selector` as its cells' texts. */
export const rowsOf = (page: Page, selector: string) =>
  page.$$eval(`${selector} tr`, (rows) =>
    rows.map((row) => [...(row as HTMLTableRowElement).cells].map((cell) => cell.textContent ?? "")),
  );

/** A view whose last request has been answered and drawn. */
export const BUSY_DONE = '.content[aria-busy="false"]';

/** Clicks the page's Apply (the first filter form's) and waits for the answer to `route` to be drawn. */
export async function apply(page: Page, route: string, form = "form.controls"): Promise<Record<string, unknown>> {
  const answered = page.waitForResponse((res) => res.url().endsWith(`/v1/${route}`));
  await page.click(`${form} button[type="submit"]`);
  const response = await answered;
  await page.waitForSelector(BUSY_DONE, { state: "attached" });
  return JSON.parse(response.request().postData() ?? "{}") as Record<string, unknown>;
}

/**
 * Runs `check` once more when a UTC midnight passed while it ran: what a read answers for the days elapsed grows
 * with the date, so a page drawn before midnight and the API asked after it rightly differ.
 */
export async function withinOneDay(check: () => Promise<void>): Promise<void> {
  const today = () => new Date().toISOString().slice(0, 10);
  const day = today();
  try {
    await check();
  } catch (error) {
    if (today() === day) throw error;
    await check();
  }
}

/** The dates the page's range control stands for. */
export async function rangeOf(page: Page): Promise<{ from: string; to: string }> {
  return { from: await page.inputValue('input[name="from"]'), to: await page.inputValue('input[name="to"]') };
}

/** 12,345 as the dashboard writes numbers. */
export const formatted = (value: number, digits = 2) =>
  value.toLocaleString("en-US", { maximumFractionDigits: digits });
