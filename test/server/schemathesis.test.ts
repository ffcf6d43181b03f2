import { execFile } from "node:child_process";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pythonVenv, type Python } from "../support/clients/python-venv.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

const run = promisify(execFile);
/** Pinned from PyPI: Schemathesis generates requests from the served OpenAPI document and checks the answers. */
const PACKAGES = ["schemathesis==4.32.5"];
const CONFIG = fileURLToPath(new URL("../support/clients/schemathesis.toml", import.meta.url));
/** Bounded: examples per operation and phase, and one seed, so that a run is repeatable and takes about a minute. */
const EXAMPLES = 25;
const SEED = 20261124;

let setup: Python;
let svc: TestService;
beforeAll(async () => {
  setup = await pythonVenv("schemathesis", PACKAGES);
  if ("skip" in setup) {
    process.stderr.write(`schemathesis.test.ts skipped: ${setup.skip}\n`);
    return;
  }
  // Schemathesis sends thousands of requests, many on purpose without a key: no limit may answer them 429.
  svc = await startTestService({
    RATE_LIMIT_PER_SECOND: "100000",
    RATE_LIMIT_BURST: "100000",
    AUTH_FAILURES_PER_MINUTE: "100000",
    AUTH_FAILURES_BURST: "100000",
  });
}, 600_000);
afterAll(() => svc?.stop());

/** Runs Schemathesis over the operations whose path matches `paths`, with `apiKey`; its exit code and output. */
async function schemathesis(
  python: string,
  paths: RegExp,
  apiKey: string,
  projectId: string,
): Promise<{ code: number; output: string }> {
  // The venv's own `st` script, run by its python: the venv was built under another name (pythonVenv), which the
  // script's first line still names.
  const args = [
    python.replace(/python$/, "st"),
    ...["--config-file", CONFIG, "run", `${svc.baseUrl}/v1/openapi.json`],
    ...["--include-path-regex", paths.source, "--max-examples", String(EXAMPLES), "--seed", String(SEED)],
    ...["--workers", "1", "--generation-database", "none", "--no-color"],
  ];
  try {
    const { stdout } = await run(python, args, {
      cwd: os.tmpdir(), // where it keeps its .schemathesis folder
      timeout: 300_000,
      maxBuffer: 64 * 1024 * 1024,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        SCHEMATHESIS_API_KEY: apiKey,
        SCHEMATHESIS_PROJECT_ID: projectId,
      },
    });
    return { code: 0, output: stdout };
  } catch (error) {
    const { code, stdout, stderr } = error as { code?: number; stdout?: string; stderr?: string };
    return { code: code ?? -1, output: `${stdout ?? ""}\n${stderr ?? ""}` };
  }
}

describe("Schemathesis over the served OpenAPI document", () => {
  it("finds no failed check and no validation mismatch, with a project's, the platform's and the admin's key", async (ctx) => {
    if ("skip" in setup) return ctx.skip(setup.skip);
    const { projectId, privateKey, publicKey } = await svc.createProject();
    // The tags and trait keys of the configuration's dictionaries.
    const players = [
      { partner_user_id: "ann", tags_add: ["vip", "Team A"], traits: { region: "eu", level: 3 } },
      { partner_user_id: "ben", tags_add: ["whale"], traits: { region: "us" } },
    ];
    expect((await svc.postJson("/v1/players/update", { players }, publicKey)).status).toBe(200);
    // The experiment of the configuration's dictionary, a draft: a change of state alone may name it.
    const variants = [
      { name: "a", weight: 1 },
      { name: "b", weight: 2.5 },
    ];
    const experiment = { name: "exp", variants, state: "draft" };
    expect((await svc.postJson("/v1/experiments/update", experiment, privateKey)).status).toBe(200);
    const { key: platformKey } = await svc.createKey("platform");
    // The admin's run last: it revokes keys it lists.
    for (const [paths, key] of [
      [/^\/v1\/(players|events)/, privateKey],
      [/^\/v1\/(config|experiments)/, privateKey],
      [/^\/v1\/(launch_tokens|\.well-known)/, platformKey],
      [/^\/v1\/admin\//, ADMIN_KEY],
    ] as const) {
      const { code, output } = await schemathesis(setup.python, paths, key, projectId);
      expect(code, `${paths}:\n${output.slice(-20_000)}`).toBe(0);
      expect(output).toMatch(/\d+ generated/);
    }
  }, 900_000);
});
