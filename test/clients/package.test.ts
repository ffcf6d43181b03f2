import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readFile, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLaunchFixture } from "../support/service/launch.js";
import { startTestService, type TestService } from "../support/service/service.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PACKAGE = "@platformapi/launch-client";
const SOURCE = path.join(ROOT, "packages", "launch-client");

let test: TestService;
let consumer: string;
let installed: string;
beforeAll(async () => {
  // A consumer's folder with the package as npm would install it: its build, its package.json, and only the
  // dependencies it declares (linked from this checkout), so nothing of the server (tsx, mongodb) is in reach.
  consumer = await mkdtemp(path.join(tmpdir(), "launch-client-consumer-"));
  installed = path.join(consumer, "node_modules", PACKAGE);
  await mkdir(installed, { recursive: true });
  await run("npm", ["run", "build", "--workspace", PACKAGE, "--", "--outDir", path.join(installed, "dist")], {
    cwd: ROOT,
  });
  await cp(path.join(SOURCE, "package.json"), path.join(installed, "package.json"));
  const manifest = JSON.parse(await readFile(path.join(SOURCE, "package.json"), "utf8"));
  for (const dependency of Object.keys(manifest.dependencies)) {
    const link = path.join(consumer, "node_modules", dependency);
    await mkdir(path.dirname(link), { recursive: true });
    await symlink(path.join(ROOT, "node_modules", dependency), link, "dir");
  }
  test = await startTestService();
}, 120_000);
afterAll(async () => {
  await test?.stop();
  await rm(consumer, { recursive: true, force: true });
});

describe("the client package, imported by name in plain Node (no TypeScript loader)", () => {
  it("ships JavaScript and type declarations where its exports point", async () => {
    const manifest = JSON.parse(await readFile(path.join(installed, "package.json"), "utf8"));
    for (const file of [manifest.exports["."].default, manifest.exports["."].types]) {
      expect(existsSync(path.join(installed, file)), file).toBe(true);
    }
  });

  it("is MIT licensed, like the service, with the LICENSE in its tarball", async () => {
    const { stdout } = await run("npm", ["pack", "--dry-run", "--json", "--ignore-scripts", "--workspace", PACKAGE], {
      cwd: ROOT,
    });
    const [{ files }] = JSON.parse(stdout) as [{ files: { path: string }[] }];
    expect(files.map((file) => file.path)).toContain("LICENSE");
    for (const manifest of [path.join(SOURCE, "package.json"), path.join(ROOT, "package.json")]) {
      expect(JSON.parse(await readFile(manifest, "utf8")).license, manifest).toBe("MIT");
    }
    expect(await readFile(path.join(ROOT, "LICENSE"), "utf8")).toMatch(/^MIT License\n/);
  });

  it("issues with the launcher helper and verifies with the studio helper", async () => {
    const launch = await createLaunchFixture(test);
    const script = `
      import { issueLaunchEnvironment, readLaunchToken, redactLaunchToken, createLaunchVerifier, launchAccess } from "${PACKAGE}";
      const env = await issueLaunchEnvironment(
        { baseUrl: process.env.BASE_URL, platformKey: process.env.PLATFORM_KEY },
        { platformUserId: process.env.USER_ID, installationId: process.env.INSTALLATION_ID, gameId: Number(process.env.GAME_ID) },
      );
      const token = readLaunchToken(env);
      const verifier = createLaunchVerifier({ baseUrl: process.env.BASE_URL, privateKey: process.env.STUDIO_KEY });
      const check = await verifier.verify(token);
      const reachable = async (name) => import(name).then(() => true, () => false);
      console.log(JSON.stringify({
        redacted: redactLaunchToken("token " + token, env),
        status: check.status,
        access: launchAccess(check),
        server: { tsx: await reachable("tsx"), mongodb: await reachable("mongodb") },
      }));
    `;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], {
      cwd: consumer,
      env: {
        PATH: process.env.PATH,
        // A run under libfaketime (docs/testing.md) shifts this process's clock: the token's expiry is read on it.
        ...Object.fromEntries(Object.entries(process.env).filter(([name]) => /^(LD_PRELOAD|FAKETIME|TZ$)/.test(name))),
        BASE_URL: test.baseUrl,
        PLATFORM_KEY: launch.platformKey,
        STUDIO_KEY: launch.privateKey,
        USER_ID: launch.platformUserId,
        INSTALLATION_ID: launch.installationId,
        GAME_ID: String(launch.gameId),
      },
    });
    expect(JSON.parse(stdout)).toEqual({
      redacted: "token [redacted]",
      status: "verified",
      access: { singlePlayer: true, online: true, reason: "verified" },
      server: { tsx: false, mongodb: false },
    });
  });
});
