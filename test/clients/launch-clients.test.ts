import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import readline from "node:readline";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/db/process.js";
import {
  createLaunchVerifier,
  launchAccess,
  launchGame,
  readLaunchToken,
  redactLaunchToken,
  type LaunchCheck,
  type VerifiedLaunch,
} from "@platformapi/launch-client";
import { createLaunchFixture, type LaunchFixture } from "../support/service/launch.js";
import { startTestService, type TestService } from "../support/service/service.js";

let test: TestService;
let launch: LaunchFixture;
beforeAll(async () => {
  test = await startTestService();
  launch = await createLaunchFixture(test);
});
afterAll(() => test.stop());

const verified = (owns: boolean): LaunchCheck => ({
  status: "verified",
  launch: { entitlement: { owns } } as VerifiedLaunch,
  config: {},
  experiments: {},
});

describe("launchAccess: the recommended policy", () => {
  it.each([
    [verified(true), { singlePlayer: true, online: true, reason: "verified" }],
    [verified(false), { singlePlayer: true, online: false, reason: "not_owned" }],
    [
      { status: "rejected", error: "expired" },
      { singlePlayer: true, online: false, reason: "expired" },
    ],
    [
      { status: "rejected", error: "invalid_token" },
      { singlePlayer: true, online: false, reason: "invalid_token" },
    ],
    [
      { status: "rejected", error: "unknown_token" },
      { singlePlayer: true, online: false, reason: "unknown_token" },
    ],
    [
      { status: "rejected", error: "already_used" },
      { singlePlayer: true, online: false, reason: "already_used" },
    ],
    [
      { status: "unavailable", reason: "no launch token" },
      { singlePlayer: true, online: false, reason: "unavailable" },
    ],
  ] as [LaunchCheck, object][])("%j -> %j", (check, access) => {
    expect(launchAccess(check)).toEqual(access);
  });
});

describe("game helpers", () => {
  const now = new Date("2026-11-22T10:00:00Z");

  it("readLaunchToken answers the token until PLATFORM_TOKEN_EXPIRES_AT has passed", () => {
    const env = (expiresAt?: string) => ({ PLATFORM_LAUNCH_TOKEN: "tok", PLATFORM_TOKEN_EXPIRES_AT: expiresAt });
    expect(readLaunchToken(env("2026-11-22T10:00:30Z"), now)).toBe("tok");
    expect(readLaunchToken(env("2026-11-22T10:00:00Z"), now)).toBeUndefined();
    expect(readLaunchToken(env("2026-11-22T09:59:00Z"), now)).toBeUndefined();
    expect(readLaunchToken(env("not a date"), now)).toBe("tok");
    expect(readLaunchToken({}, now)).toBeUndefined();
  });

  it("redactLaunchToken removes the token from strings, env entries, arrays and errors, leaving the input untouched", () => {
    const token = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ1In0.c2ln";
    const env = { PLATFORM_LAUNCH_TOKEN: token };
    const error = new Error(`verify failed for ${token}`);
    const report = {
      message: `token=${token}`,
      env: { ...env, HOME: "/home/p" },
      list: [token, "fine"],
      other: "eyJraWQiOiJ4In0.eyJhIjoxfQ.sig",
      error,
    };
    const safe = redactLaunchToken(report, env);
    const text = JSON.stringify(safe);
    expect(text).not.toContain(token);
    expect(text).not.toContain("eyJraWQiOiJ4In0");
    expect(safe.env).toEqual({ PLATFORM_LAUNCH_TOKEN: "[redacted]", HOME: "/home/p" });
    expect(safe.list).toEqual(["[redacted]", "fine"]);
    expect((safe.error as unknown as { message: string }).message).toBe("verify failed for [redacted]");
    expect(report.message).toBe(`token=${token}`);
  });
});

describe("launcher, game and studio backend end to end", () => {
  it("the launcher puts the token in the game's environment; a child of the game inherits it and is already_used", async () => {
    const verifyScript = `
      const res = await fetch(process.env.VERIFY_URL, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": process.env.STUDIO_KEY },
        body: JSON.stringify({ token: process.env.PLATFORM_LAUNCH_TOKEN }),
      });
      return (await res.json());`;
    const gameScript = `
      const { spawnSync } = require("node:child_process");
      (async () => {
        const first = await (async () => {${verifyScript}})();
        console.log(JSON.stringify({ who: "game", expires_at: process.env.PLATFORM_TOKEN_EXPIRES_AT, answer: first }));
        const child = spawnSync(process.execPath, ["-e", process.env.CHILD_SCRIPT], { encoding: "utf8" });
        process.stdout.write(child.stdout);
      })();`;
    const childScript = `(async () => { const answer = await (async () => {${verifyScript}})(); console.log(JSON.stringify({ who: "child", answer })); })();`;

    const game = await launchGame(
      { baseUrl: test.baseUrl, platformKey: launch.platformKey },
      {
        platformUserId: launch.platformUserId,
        installationId: launch.installationId,
        gameId: launch.gameId,
        channelId: "stable",
      },
      process.execPath,
      ["-e", gameScript],
      {
        env: {
          PATH: process.env.PATH,
          VERIFY_URL: `${test.baseUrl}/v1/launch_tokens/verify`,
          STUDIO_KEY: launch.privateKey,
          CHILD_SCRIPT: childScript,
        },
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    const lines: any[] = [];
    readline.createInterface({ input: game.stdout! }).on("line", (line) => lines.push(JSON.parse(line)));
    const [code] = await once(game, "exit");
    expect(code).toBe(0);
    expect(lines).toHaveLength(2);
    expect(lines[0].who).toBe("game");
    expect(lines[0].expires_at).toMatch(/Z$/);
    expect(lines[0].answer).toMatchObject({
      valid: true,
      platform_user_id: launch.platformUserId,
      entitlement: { channel_id: "stable" },
    });
    expect(lines[1]).toMatchObject({
      who: "child",
      answer: { valid: false, platform_user_id: null, error: "already_used" },
    });
  });

  it("launchGame starts nothing when the user does not own the game", async () => {
    const other = await createLaunchFixture(test);
    await other.setOwnership(false);
    await expect(
      launchGame(
        { baseUrl: test.baseUrl, platformKey: other.platformKey },
        { platformUserId: other.platformUserId, installationId: other.installationId, gameId: other.gameId },
        process.execPath,
        ["-e", "process.exit(3)"],
      ),
    ).rejects.toMatchObject({ code: 7 });
  });

  it("the studio verifier verifies once per token and shares the answer with the whole process tree", async () => {
    const { token } = await launch.issue();
    let requests = 0;
    const verifier = createLaunchVerifier({
      baseUrl: test.baseUrl,
      privateKey: launch.privateKey,
      fetch: (input, init) => {
        requests++;
        return fetch(input, init);
      },
    });
    const answers = await Promise.all(Array.from({ length: 5 }, () => verifier.verify(token)));
    const later = await verifier.verify(token);
    expect(requests).toBe(1);
    for (const answer of [...answers, later]) {
      expect(answer).toMatchObject({ status: "verified", launch: { platformUserId: launch.platformUserId } });
      expect(launchAccess(answer)).toEqual({ singlePlayer: true, online: true, reason: "verified" });
    }
  });

  it("the studio verifier reports a spent token as rejected and a missing one as unavailable", async () => {
    const { token } = await launch.issue();
    expect((await launch.verify(token)).body.valid).toBe(true);
    const verifier = createLaunchVerifier({ baseUrl: test.baseUrl, privateKey: launch.privateKey });
    expect(await verifier.verify(token)).toEqual({ status: "rejected", error: "already_used" });
    expect(await verifier.verify(undefined)).toEqual({ status: "unavailable", reason: "no launch token" });
  });

  it("an unreachable service is unavailable: single-player allowed, online denied, and retried next time", async () => {
    const port = await freePort();
    const verifier = createLaunchVerifier({ baseUrl: `http://127.0.0.1:${port}`, privateKey: launch.privateKey });
    const check = await verifier.verify("some-token");
    expect(check.status).toBe("unavailable");
    expect(launchAccess(check)).toEqual({ singlePlayer: true, online: false, reason: "unavailable" });
    expect((await verifier.verify("some-token")).status).toBe("unavailable");
  });
});

describe("the studio verifier reads replies with the generated schema", () => {
  it("decodes a verified launch: identity, issue time and entitlement", async () => {
    const { token } = await launch.issue();
    const verifier = createLaunchVerifier({ baseUrl: test.baseUrl, privateKey: launch.privateKey });
    const check = await verifier.verify(token);
    if (check.status !== "verified") throw new Error(`not verified: ${JSON.stringify(check)}`);
    expect(check.launch).toMatchObject({
      platformUserId: launch.platformUserId,
      partnerUserId: expect.any(String),
      installationId: launch.installationId,
      entitlement: { owns: true, gameId: launch.gameId, channelId: "beta", buildVersion: "1.2.3", source: "STORE" },
    });
    expect(Math.abs(timestampDate(check.launch.issuedAt).getTime() - test.clock.now().getTime())).toBeLessThan(60_000);
  });

  it("answers the player's config as plain JSON and their experiments' variants", async () => {
    const studio = (path: string, body: object) => test.postOk(path, body, launch.privateKey);
    await studio("/v1/config/update", { key: "shop", default_value: { layout: "a", slots: [1, 2] }, in_launch: true });
    await studio("/v1/config/update", { key: "not_in_launch", default_value: 1 });
    await studio("/v1/experiments/update", {
      name: "onboarding",
      variants: [
        { name: "a", weight: 1 },
        { name: "b", weight: 1 },
      ],
      state: "running",
    });
    const { token } = await launch.issue();
    const verifier = createLaunchVerifier({ baseUrl: test.baseUrl, privateKey: launch.privateKey });
    const check = await verifier.verify(token);
    if (check.status !== "verified") throw new Error(`not verified: ${JSON.stringify(check)}`);
    expect(check.config).toEqual({ shop: { layout: "a", slots: [1, 2] } });
    expect(Object.keys(check.experiments)).toEqual(["onboarding"]);
    expect(["a", "b"]).toContain(check.experiments.onboarding);
  });

  /** A stand-in for the service on a real socket, answering every request with `body`. */
  async function serviceAnswering(body: string): Promise<http.Server> {
    const server = http.createServer((_req, res) => res.setHeader("content-type", "application/json").end(body));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return server;
  }
  const identity = {
    platform_user_id: "7f1c2a4e-0000-4000-8000-000000000001",
    partner_user_id: "pp_1",
    installation_id: "0b6f1c9e-0000-4000-8000-000000000002",
    issued_at: "2026-11-22T10:00:00Z",
    entitlement: { owns: true, source: "STORE", game_id: 42, channel_id: "stable", build_version: "1.0.0" },
  };

  it.each([
    ["a field a newer service adds is skipped", { valid: true, ...identity, risk_score: 3 }, "verified"],
    [
      "the /v1 nulls of a rejection are unset fields",
      { valid: false, error: "expired", entitlement: null },
      "rejected",
    ],
    ["valid without the launch's identity", { valid: true }, "unavailable"],
    ["a rejection this client does not know", { valid: false, error: "revoked" }, "unavailable"],
    ["a field of the wrong type", { valid: "yes" }, "unavailable"],
    ["a body that is not JSON", "<html>", "unavailable"],
  ])("%s: %j -> %s", async (_case, reply, status) => {
    const server = await serviceAnswering(typeof reply === "string" ? reply : JSON.stringify(reply));
    try {
      const { port } = server.address() as AddressInfo;
      const verifier = createLaunchVerifier({ baseUrl: `http://127.0.0.1:${port}`, privateKey: "sk_test" });
      const check = await verifier.verify("some-token");
      expect(check.status).toBe(status);
      if (check.status === "verified") expect(check.launch.partnerUserId).toBe("pp_1");
      if (check.status === "rejected") expect(check.error).toBe("expired");
    } finally {
      server.close();
    }
  });
});
