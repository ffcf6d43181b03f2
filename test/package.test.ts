import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLaunchFixture } from "./support/launch.js";
import { startTestService, type TestService } from "./support/service.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("..", import.meta.url));

let test: TestService;
beforeAll(async () => {
  // The package's JavaScript, as `npm install` builds it (prepare), fresh for this run.
  await run("npm", ["run", "build"], { cwd: ROOT });
  test = await startTestService();
}, 120_000);
afterAll(() => test.stop());

describe("the package, imported by name in plain Node (no TypeScript loader)", () => {
  it("issues with the launcher helper and verifies with the studio helper", async () => {
    const launch = await createLaunchFixture(test);
    // A self-reference by package name resolves through package.json "exports", as a consumer's import does.
    const script = `
      import { issueLaunchEnvironment, readLaunchToken, redactLaunchToken, createLaunchVerifier, launchAccess } from "platform-backend";
      const env = await issueLaunchEnvironment(
        { baseUrl: process.env.BASE_URL, platformKey: process.env.PLATFORM_KEY },
        { platformUserId: process.env.USER_ID, installationId: process.env.INSTALLATION_ID, gameId: Number(process.env.GAME_ID) },
      );
      const token = readLaunchToken(env);
      const verifier = createLaunchVerifier({ baseUrl: process.env.BASE_URL, privateKey: process.env.STUDIO_KEY });
      const check = await verifier.verify(token);
      console.log(JSON.stringify({ redacted: redactLaunchToken("token " + token, env), status: check.status, access: launchAccess(check) }));
    `;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
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
    });
  });
});
