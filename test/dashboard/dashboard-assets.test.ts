import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service/service.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc?.stop());

describe("dashboard assets", () => {
  it("serves the page and its assets under a strict Content-Security-Policy", async () => {
    const page = await fetch(svc.baseUrl + "/dashboard");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const policy = page.headers.get("content-security-policy")!;
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("connect-src 'self'");
    expect(policy).not.toContain("unsafe");
    const html = await page.text();
    expect(html).toContain('src="/dashboard/app.js"');
    // Nothing comes from another origin.
    expect(html).not.toMatch(/https?:\/\//);
    for (const [asset, type] of [
      ["app.js", "text/javascript; charset=utf-8"],
      ["app.css", "text/css; charset=utf-8"],
    ]) {
      const res = await fetch(`${svc.baseUrl}/dashboard/${asset}`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe(type);
      expect((await res.text()).length).toBeGreaterThan(100);
    }
  });

  it("serves nothing else under /dashboard and only to GET", async () => {
    expect((await fetch(svc.baseUrl + "/dashboard/../package.json")).status).toBe(404);
    expect((await fetch(svc.baseUrl + "/dashboard/.sources")).status).toBe(404);
    expect((await fetch(svc.baseUrl + "/dashboard", { method: "POST" })).status).toBe(405);
  });

  it("sends a browser at / to the dashboard; a JSON caller keeps the 404", async () => {
    const browser = await fetch(svc.baseUrl + "/", { headers: { accept: "text/html,*/*;q=0.8" }, redirect: "manual" });
    expect(browser.status).toBe(302);
    expect(browser.headers.get("location")).toBe("/dashboard");
    const caller = await fetch(svc.baseUrl + "/", { headers: { accept: "application/json" } });
    expect(caller.status).toBe(404);
    expect(await caller.json()).toMatchObject({ code: "not_found" });
    const posted = await fetch(svc.baseUrl + "/", {
      method: "POST",
      headers: { accept: "text/html" },
      redirect: "manual",
    });
    expect(posted.status).toBe(404);
  });
});
