import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { afterAll, beforeAll } from "vitest";
import { freePort } from "../../../src/db/process.js";
import { ADMIN_KEY } from "./service.js";

// Runs `npm start`'s entry point as a process of its own, as an operator would: one node process with tsx's
// loader (the tsx command would put a second process in between, which a SIGKILL would leave running).

export interface MainProcess {
  baseUrl: string;
  /** Log lines (JSON) and stderr lines so far. */
  logs: Array<Record<string, unknown>>;
  stderr: string[];
  /** Resolves when it serves; rejects with its stderr when it exits first. */
  serving: Promise<void>;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
  /** "serving", or the exit code of a process that exited without serving. */
  outcome: Promise<"serving" | number | null>;
  child: ChildProcess;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

export interface SpawnOptions {
  /** The number of files the process may open (`ulimit -n`); unset: what this process may. */
  openFileLimit?: number;
  /** The entry point run (src/main.ts by default; a test's own that wraps it). */
  entry?: string;
}

export async function spawnMain(
  env: Record<string, string>,
  { openFileLimit, entry = "src/main.ts" }: SpawnOptions = {},
): Promise<MainProcess> {
  const port = await freePort();
  const command = [process.execPath, "--import", "tsx", entry];
  // The shell lowers its limit, then becomes the node process (exec), so signals still reach node.
  const [file, ...args] =
    openFileLimit === undefined ? command : ["sh", "-c", `ulimit -n ${openFileLimit} && exec "$@"`, "sh", ...command];
  const child = spawn(file, args, {
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const logs: Array<Record<string, unknown>> = [];
  const stderr: string[] = [];
  readline.createInterface({ input: child.stderr! }).on("line", (line) => stderr.push(line));
  const exited = once(child, "exit").then(([code]) => code as number | null);
  const serving = new Promise<void>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on("line", (line) => {
      logs.push(JSON.parse(line) as Record<string, unknown>);
      if (line.includes('"msg":"serving gRPC')) resolve();
    });
    void exited.then((code) => reject(new Error(`exited with ${code}: ${stderr.join("\n")}`)));
  });
  serving.catch(() => {}); // a test that expects a refusal awaits `exited` instead
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    logs,
    stderr,
    serving,
    exited,
    outcome: Promise.race([serving.then(() => "serving" as const), exited]),
    child,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}

/** Polls `condition` until it holds; fails after `timeoutMs`. */
export async function waitFor(condition: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The service processes of one suite: each started on database `dbName` with the suites' admin key (and whatever
 * `env` adds: `DATA_DIR: dataDir` for the suite's own folder, made before its tests); all stopped and the folder
 * removed once the suite ends. Call it at the top of the suite file.
 */
export function suiteProcesses(dbName: string) {
  const started: MainProcess[] = [];
  const suite = {
    dataDir: "",
    async start(env: Record<string, string> = {}): Promise<MainProcess> {
      const main = await spawnMain({ DB_NAME: dbName, PLATFORM_ADMIN_KEY: ADMIN_KEY, ...env });
      started.push(main);
      return main;
    },
  };
  beforeAll(async () => {
    suite.dataDir = await mkdtemp(path.join(os.tmpdir(), `platform-${dbName}-`));
  });
  afterAll(async () => {
    await Promise.all(started.map((p) => p.stop()));
    await rm(suite.dataDir, { recursive: true, force: true });
  });
  return suite;
}

/** POSTs `body` as JSON with API key `key` and answers the parsed body; any status but 200 throws, naming it. */
export async function postTo(main: MainProcess, path: string, body: object, key: string): Promise<any> {
  const res = await fetch(main.baseUrl + path, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await res.json();
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(answer)}`);
  return answer;
}
