import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blockSteps, shapeMismatches, shellBlocks, type Step } from "../support/readme-blocks.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

// The README runs as written: its shell blocks run in order, in one bash, against a fresh service,
// and each answer must have the shape of the output shown under its command (`# {...}` lines).
// A block marked `<!-- not run by test/service/readme.test.ts: <why> -->` is not run; one test checks the markers.

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const blocks = shellBlocks(README);
const steps = blocks.filter((block) => block.notRun === undefined).flatMap(blockSteps);
const STEP_END = "@@readme-step-end";
const RUN_TIMEOUT_MS = 180_000;

interface StepResult {
  stdout: string;
  stderr: string;
  /** False when the run stopped before the step ended: it or an earlier step failed. */
  finished: boolean;
}

let service: TestService;
let results: StepResult[] = [];
/** The step bash stopped in (-1: none), and its exit code. */
let failed = -1;
let bashExit: number | null = null;

/**
 * One script, so variables set by a step reach the later ones as in a user's shell. `set -e -o pipefail`
 * stops at the first command that fails, even one whose failure a later command would hide.
 */
function script(): string {
  const end = (i: number) => `printf '\\n${STEP_END} ${i}\\n'; printf '\\n${STEP_END} ${i}\\n' >&2\n`;
  return "set -e -o pipefail\n" + steps.map((step, i) => `${step.script}\n${end(i)}`).join("");
}

/** Splits a stream at the step markers: the text each step wrote, by step. */
function byStep(output: string): Map<number, string> {
  const parts = new Map<number, string>();
  let from = 0;
  for (const match of output.matchAll(new RegExp(`\\n${STEP_END} (\\d+)\\n`, "g"))) {
    parts.set(Number(match[1]), output.slice(from, match.index));
    from = match.index + match[0].length;
  }
  parts.set(-1, output.slice(from));
  return parts;
}

async function runSteps(env: NodeJS.ProcessEnv): Promise<void> {
  // A process group of its own, so that a timeout also ends the commands bash started (they hold its pipes).
  const bash = spawn("bash", ["-c", script()], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let stdout = "";
  let stderr = "";
  bash.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  bash.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => process.kill(-bash.pid!, "SIGKILL"), RUN_TIMEOUT_MS);
  [bashExit] = (await once(bash, "close")) as [number | null];
  clearTimeout(timer);

  const [out, err] = [byStep(stdout), byStep(stderr)];
  // What the step that failed wrote is what follows the last marker.
  failed = steps.findIndex((_, i) => !out.has(i));
  const written = (parts: Map<number, string>, i: number) => parts.get(i) ?? (i === failed ? parts.get(-1)! : "");
  results = steps.map((_, i) => ({
    finished: out.has(i),
    stdout: written(out, i),
    stderr: written(err, i).replace(/^npm warn .*\n/gm, ""),
  }));
}

beforeAll(async () => {
  for (const tool of ["bash", "curl", "jq"]) {
    if (spawnSync(tool, ["--version"]).error) throw new Error(`the README's walkthrough needs ${tool} on PATH`);
  }
  service = await startTestService();
  await runSteps({ ...process.env, PLATFORM_URL: service.baseUrl, PLATFORM_ADMIN_KEY: ADMIN_KEY });
}, RUN_TIMEOUT_MS + 60_000);
afterAll(() => service?.stop());

function describeStep(step: Step): string {
  return `README.md:${step.line} ${step.script.split("\n")[0].slice(0, 70)}`;
}

describe("the README runs as written", () => {
  it("has shell blocks to run", () => {
    expect(steps.length).toBeGreaterThan(3);
  });

  it("every marker of a block not run stands right before the shell block it keeps out", () => {
    const markers = README.split("\n").filter((line) => line.includes("not run by test/service/readme.test.ts")).length;
    const notRun = blocks.filter((block) => block.notRun !== undefined);
    // A marker that keeps no block out (mistyped, or its block moved away) would claim what is not so.
    expect(notRun).toHaveLength(markers);
  });

  steps.forEach((step, i) => {
    it(describeStep(step), () => {
      const { stdout, stderr, finished } = results[i];
      const context = `\n--- script\n${step.script}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`;
      if (!finished) {
        expect.fail(
          i === failed ? `the step failed: bash exited with ${bashExit}${context}` : "an earlier step failed",
        );
      }
      if (step.expected === undefined) {
        expect(stdout.trim(), `the step prints output the README does not show${context}`).toBe("");
        return;
      }
      let answer: unknown;
      try {
        answer = JSON.parse(stdout);
      } catch {
        expect.fail(`the answer is not JSON${context}`);
      }
      expect(shapeMismatches(step.expected, answer), `the answer differs from the README${context}`).toEqual([]);
    });
  });
});
