import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventTimes } from "../support/service/events.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

const run = promisify(execFile);

let test: TestService;
beforeAll(async () => {
  test = await startTestService();
});
afterAll(() => test.stop());

function platformctl(args: string[], env: Record<string, string> = {}) {
  return run("node", ["bin/platformctl.js", "--url", test.baseUrl, ...args], {
    env: { ...process.env, PLATFORM_ADMIN_KEY: ADMIN_KEY, ...env },
  });
}

describe("platformctl", () => {
  it("creates a project, a platform key and an entitlement, printing /v1 JSON", async () => {
    const project = JSON.parse(
      (await platformctl(["projects", "create", "--name", "CLI", "--game-id", "4242"])).stdout,
    );
    expect(project.project).toMatchObject({ name: "CLI", game_id: 4242 });
    expect(project.private_key).toMatch(/^sk_/);

    const key = JSON.parse((await platformctl(["api-keys", "create", "--type", "platform"])).stdout);
    expect(key).toMatchObject({ type: "platform", scopes: ["launch:issue"], project_id: "" });

    const refund = JSON.parse(
      (
        await platformctl([
          "entitlements",
          "set",
          "--user",
          "7f1c2a4e-0000-4000-8000-0000000000aa",
          "--game-id",
          "4242",
          "--no-owns",
        ])
      ).stdout,
    );
    expect(refund.entitlement).toMatchObject({ owns: false, source: "STORE", game_id: 4242 });
  });

  it("creates a project's reader key, with events:read only", async () => {
    const { projectId } = await test.createProject("Reader");
    const key = JSON.parse(
      (await platformctl(["api-keys", "create", "--type", "reader", "--project", projectId])).stdout,
    );
    expect(key).toMatchObject({ type: "reader", scopes: ["events:read"], project_id: projectId });
    expect(key.key).toMatch(/^rk_/);
  });

  it("sums a project's event property and lists it, with the project's key", async () => {
    const { privateKey } = await test.createProject("Sums");
    const withKey = { PLATFORM_API_KEY: privateKey };
    const set = JSON.parse(
      (await platformctl(["properties", "set", "--name", "purchase", "--property", "amount"], withKey)).stdout,
    );
    expect(set).toEqual({ property: { name: "purchase", property: "amount", sum: true } });
    const listed = JSON.parse((await platformctl(["properties", "list"], withKey)).stdout);
    expect(listed).toEqual({ properties: [{ name: "purchase", property: "amount", sum: true }] });
    const off = ["properties", "set", "--name", "purchase", "--property", "amount", "--no-sum"];
    expect(JSON.parse((await platformctl(off, withKey)).stdout).property.sum).toBe(false);
  });

  it("exports a cohort as the NDJSON lines of /v1/players/export", async () => {
    const { privateKey, publicKey } = await test.createProject("Export");
    const players = [
      { partner_user_id: "b", tags: ["vip"], traits: { level: 2, region: "eu" } },
      { partner_user_id: "a", tags: ["vip", "whale"], traits: { level: 2 } },
      { partner_user_id: "c", tags: ["other"], traits: { level: 2 } },
    ];
    await test.postOk("/v1/players/update", { players }, publicKey);
    const args = ["players", "export", "--tag", "VIP", "--tag", "other", "--tag-none", "whale", "--trait", "level=2"];
    const { stdout } = await platformctl(args, { PLATFORM_API_KEY: privateKey });
    const body = { tags: ["VIP", "other"], tags_none: ["whale"], traits: { level: 2 } };
    const res = await fetch(`${test.baseUrl}/v1/players/export`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": privateKey },
      body: JSON.stringify(body),
    });
    expect(stdout).toBe(await res.text());
    expect(
      stdout
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line).player.partner_user_id),
    ).toEqual(["b", "c"]);
    await expect(platformctl(["players", "export"], { PLATFORM_API_KEY: publicKey })).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining("events:read"),
    });
  });

  it("hands over a player's data as the NDJSON lines of /v1/players/data, then erases them", async () => {
    const { privateKey, publicKey } = await test.createProject("Erasure");
    const withKey = { PLATFORM_API_KEY: privateKey };
    await test.postOk("/v1/players/update", { players: [{ partner_user_id: "ann", tags: ["vip"] }] }, privateKey);
    const [{ timestamp }] = eventTimes(test, 1);
    await test.postOk("/v1/events", { events: [{ name: "open", partner_user_id: "ann", timestamp }] }, publicKey);
    const lines = async () =>
      (await platformctl(["players", "data", "--partner", "ann"], withKey)).stdout
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line));
    const [first, ...events] = await lines();
    // The lines of /v1's NDJSON: the profile, then an event a line.
    expect([first, ...events]).toEqual(await test.postOk("/v1/players/data", { partner_user_id: "ann" }, privateKey));
    expect(first).toEqual({ profile: expect.objectContaining({ identity_key: "u:ann", tags: ["vip"] }) });
    expect(events).toEqual([{ event: expect.objectContaining({ name: "open", partner_user_id: "ann", timestamp }) }]);
    const erased = JSON.parse((await platformctl(["players", "delete", "--partner", "ann"], withKey)).stdout);
    expect(erased).toEqual({ deleted: true, identity_key: "u:ann" });
    expect((await lines())[0]).toEqual({ profile: null });
    await expect(platformctl(["players", "delete"], withKey)).rejects.toMatchObject({
      stderr: expect.stringContaining("--partner or --device"),
    });
  });

  it("sets, lists, restores and deletes config entries, runs an experiment and evaluates a player", async () => {
    const { privateKey } = await test.createProject("Config");
    const withKey = { PLATFORM_API_KEY: privateKey };
    const ctl = async (args: string[]) => JSON.parse((await platformctl(args, withKey)).stdout);
    const set = await ctl([
      ...["config", "set", "shop", "--default", '{"layout":"a"}', "--in-launch"],
      ...["--rule", '{"tags":["VIP"],"rollout_percent":50,"value":"gold"}', "--rule", '{"value":"b"}'],
    ]);
    expect(set.entry).toMatchObject({
      key: "shop",
      default_value: { layout: "a" },
      rules: [
        { tags: ["vip"], rollout_percent: 50, value: "gold" },
        { tags: [], rollout_percent: null, value: "b" },
      ],
      in_launch: true,
      version: 1,
    });
    await ctl(["config", "set", "shop", "--default", "plain text"]);
    expect((await ctl(["config", "list"])).entries.map((e: { default_value: unknown }) => e.default_value)).toEqual([
      "plain text",
    ]);
    expect((await ctl(["config", "restore", "shop", "1"])).entry).toMatchObject({ version: 3, in_launch: true });
    expect((await ctl(["config", "history", "shop", "--page-size", "2"])).versions_info).toEqual({
      total: 3,
      pages: 2,
      page: 1,
    });
    const experiment = await ctl([
      ...["experiments", "set", "onboarding", "--state", "running", "--variant", "a=1", "--variant", "b=2.5"],
      ...["--control", "b", "--tag-none", "churned", "--trait", "level=3"],
    ]);
    expect(experiment.experiment).toMatchObject({
      variants: [
        { name: "a", weight: 1 },
        { name: "b", weight: 2.5 },
      ],
      control: "b",
      tags_none: ["churned"],
      traits: { level: 3 },
      state: "running",
    });
    expect((await ctl(["experiments", "list"])).experiments).toHaveLength(1);
    await test.postOk("/v1/players/update", { players: [{ partner_user_id: "p1", traits: { level: 3 } }] }, privateKey);
    const evaluated = await ctl(["config", "evaluate", "--partner", "p1"]);
    expect(evaluated).toEqual({ config: { shop: "b" }, experiments: { onboarding: expect.any(String) }, version: 4 });
    expect(await ctl(["config", "evaluate", "--partner", "p1", "--entry", "nope"])).toMatchObject({ config: {} });
    const metric = { kind: "event", days: 2, name: "open" };
    const results = await ctl([
      "experiments",
      "results",
      "onboarding",
      "--metric",
      "event",
      "--days",
      "2",
      "--event",
      "open",
    ]);
    expect(results).toEqual(await test.postOk("/v1/experiments/results", { name: "onboarding", metric }, privateKey));
    expect(
      results.variants.map((one: { exposed: number }) => one.exposed).reduce((a: number, b: number) => a + b),
    ).toBe(1);
    await expect(
      platformctl(
        ["experiments", "results", "onboarding", "--metric", "sum", "--days", "2", "--event", "open"],
        withKey,
      ),
    ).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining("metric.property: ") });
    expect(await ctl(["config", "delete", "shop"])).toEqual({ version: 4 });
    await expect(platformctl(["config", "set", "bad key", "--default", "1"], withKey)).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining("key: "),
    });
  });

  it("fails with the service's message and a non-zero exit", async () => {
    await expect(platformctl(["api-keys", "revoke", "key_missing"])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining("no key key_missing"),
    });
  });

  it("lists projects, a project's API keys and entitlements, a page at a time", async () => {
    const first = await test.createProject("Listed one");
    const second = await test.createProject("Listed two");
    const list = async (args: string[]) => JSON.parse((await platformctl(args)).stdout);

    const projects = await list(["projects", "list", "--page-size", "100"]);
    expect(projects.projects).toEqual(
      expect.arrayContaining([
        { project_id: first.projectId, name: "Listed one", game_id: first.gameId },
        { project_id: second.projectId, name: "Listed two", game_id: second.gameId },
      ]),
    );
    const gameIds = projects.projects.map((p: { game_id: number }) => p.game_id);
    expect(gameIds).toEqual([...gameIds].sort((a, b) => a - b));
    const total = projects.projects_info.total;
    expect(await list(["projects", "list", "--page", "2", "--page-size", "1"])).toEqual({
      projects: [projects.projects[1]],
      projects_info: { total, pages: total, page: 2 },
    });

    // A project's two keys are made in the same instant: the list orders them by id then, so by type here.
    const byType = async () => {
      const { api_keys } = await list(["api-keys", "list", "--project", first.projectId]);
      return Object.fromEntries(api_keys.map((k: { type: string }) => [k.type, k]));
    };
    const keys = await byType();
    expect(Object.keys(keys).sort()).toEqual(["private", "public"]);
    expect(keys.private).toEqual({
      key_id: expect.stringMatching(/^key_/),
      type: "private",
      scopes: ["launch:verify", "events:write", "events:read", "players:manage"],
      project_id: first.projectId,
      created_at: expect.any(String),
      revoked_at: null,
    });
    expect(JSON.stringify(keys)).not.toContain(first.privateKey);
    await platformctl(["api-keys", "revoke", keys.public.key_id]);
    const after = await byType();
    expect(after.public.revoked_at).toEqual(expect.any(String));
    expect(after.private.revoked_at).toBeNull();

    const user = "7f1c2a4e-0000-4000-8000-0000000000bb";
    for (const gameId of [second.gameId, first.gameId]) {
      await platformctl(["entitlements", "set", "--user", user, "--game-id", String(gameId), "--channel", "beta"]);
    }
    const owned = await list(["entitlements", "list", "--user", user.toUpperCase()]);
    expect(owned).toEqual({
      entitlements: [first.gameId, second.gameId].map((gameId) => ({
        platform_user_id: user,
        entitlement: { owns: true, source: "STORE", game_id: gameId, channel_id: "beta", build_version: "" },
        updated_at: expect.any(String),
      })),
      entitlements_info: { total: 2, pages: 1, page: 1 },
    });
    const ofGame = await list(["entitlements", "list", "--game-id", String(second.gameId)]);
    expect(ofGame.entitlements.map((e: { platform_user_id: string }) => e.platform_user_id)).toEqual([user]);
  });

  it("lists over /v1 with the admin scope only, refusing a page size over 100 naming it", async () => {
    const { privateKey } = await test.createProject("Not an admin");
    for (const path of ["/v1/admin/projects/list", "/v1/admin/api_keys/list", "/v1/admin/entitlements/list"]) {
      expect((await test.postJson(path, {}, privateKey)).status).toBe(403);
      expect((await test.postJson(path, {}, ADMIN_KEY)).status).toBe(200);
      const tooBig = await test.postJson(path, { page_size: 101 }, ADMIN_KEY);
      expect(tooBig.status).toBe(400);
      expect(tooBig.body.message).toMatch(/^page_size: /);
    }
  });

  it("describes every command in its help", async () => {
    const { stdout } = await platformctl(["entitlements", "--help"]);
    expect(stdout).toMatch(/set \[options\] +record that a user owns a game/);
    expect(stdout).toMatch(/list \[options\] +list the records/);
  });

  it("never prints the admin key in its help", async () => {
    const { stdout } = await platformctl(["--help"]);
    expect(stdout).not.toContain(ADMIN_KEY);
  });
});
