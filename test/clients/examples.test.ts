import { spawn } from "node:child_process";
import { once } from "node:events";
import readline from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/db/process.js";
import { startTestService, type TestService } from "../support/service/service.js";

// The examples run as a newcomer runs them: `npx tsx examples/<name>.ts`, as processes of their own.
const TSX = "node_modules/.bin/tsx";

let test: TestService;
beforeAll(async () => {
  test = await startTestService();
});
afterAll(() => test.stop());

describe("examples", () => {
  it("launcher.ts without arguments prints its usage, not a stack trace, and exits 2", async () => {
    const env = { ...process.env };
    delete env.PLATFORM_KEY;
    const child = spawn(TSX, ["examples/launcher.ts"], { env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, "exit")) as [number | null];
    expect(code).toBe(2);
    expect(stderr).toBe("usage: PLATFORM_KEY=plk_... npx tsx examples/launcher.ts <platform_user_id> <game_id>\n");
  });

  it("the studio backend answers a body that is not JSON with 400 and keeps serving", async () => {
    const { privateKey } = await test.createProject("Examples");
    const port = await freePort();
    const child = spawn(TSX, ["examples/studio-backend.ts"], {
      env: { ...process.env, STUDIO_PRIVATE_KEY: privateKey, STUDIO_PORT: String(port), PLATFORM_URL: test.baseUrl },
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        readline.createInterface({ input: child.stdout }).on("line", (line) => {
          if (line.startsWith("studio backend on")) resolve();
        });
        child.once("exit", (code) => reject(new Error(`the studio backend exited with ${code}`)));
      });
      const session = (body: string) => fetch(`http://127.0.0.1:${port}/session`, { method: "POST", body });

      for (const body of ["not json", "null", '{"token": 5}']) {
        const refused = await session(body);
        expect(refused.status).toBe(400);
        expect(await refused.json()).toEqual({ error: 'the body must be JSON: {"token": "<the launch token>"}' });
      }
      const answered = await session(JSON.stringify({ token: "not-a-token" }));
      expect(answered.status).toBe(200);
      expect(await answered.json()).toEqual({
        player: null,
        singlePlayer: true,
        online: false,
        reason: "invalid_token",
      });
    } finally {
      child.kill("SIGTERM");
      if (child.exitCode === null) await once(child, "exit");
    }
  });
});
