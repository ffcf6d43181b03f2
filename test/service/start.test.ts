import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, symlink } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/db/process.js";
import { spawnMain } from "../support/service/main-process.js";

// These tests run `npm start`'s entry point as its own process, with its own embedded database.
const TSX = path.resolve("node_modules/.bin/tsx");

interface StartedProcess {
  baseUrl: string;
  stderr: string[];
  stop(): Promise<number | null>;
}

async function start(env: Record<string, string>): Promise<StartedProcess> {
  const port = await freePort();
  const child: ChildProcess = spawn(TSX, ["src/main.ts"], {
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stderr: string[] = [];
  readline.createInterface({ input: child.stderr! }).on("line", (line) => stderr.push(line));
  const serving = new Promise<void>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on("line", (line) => {
      if (line.includes('"msg":"serving gRPC')) resolve();
    });
    child.once("exit", (code) => reject(new Error(`exited with ${code}: ${stderr.join("\n")}`)));
  });
  await serving;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    stderr,
    async stop() {
      child.kill("SIGTERM");
      const [code] = (await once(child, "exit")) as [number | null];
      return code;
    },
  };
}

/** Runs `npm start`'s entry point until it exits; its exit code and the lines it wrote to stderr. */
async function startUntilExit(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string[] }> {
  const child = spawn(TSX, ["src/main.ts"], { env, stdio: ["ignore", "ignore", "pipe"] });
  const stderr: string[] = [];
  readline.createInterface({ input: child.stderr! }).on("line", (line) => stderr.push(line));
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, stderr: stderr.filter((line) => line.trim() !== "") };
}

let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "platform-start-"));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

describe("npm start", () => {
  it("generates an admin key once, keeps data in DATA_DIR across restarts, and exits cleanly on SIGTERM", async () => {
    const env = { DATA_DIR: dataDir, DB_NAME: "start_test", PLATFORM_ADMIN_KEY: "" };

    const first = await start(env);
    const printed = first.stderr.join("\n").match(/PLATFORM_ADMIN_KEY=(adm_\S+)/);
    expect(printed).not.toBeNull();
    const adminKey = printed![1];
    const created = await fetch(`${first.baseUrl}/v1/admin/projects`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": adminKey },
      body: JSON.stringify({ name: "Persisted", game_id: 31337 }),
    });
    expect(created.status).toBe(200);
    expect(await first.stop()).toBe(0);

    const second = await start(env);
    try {
      expect(second.stderr.join("\n")).not.toContain("PLATFORM_ADMIN_KEY=");
      const again = await fetch(`${second.baseUrl}/v1/admin/projects`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": adminKey },
        body: JSON.stringify({ name: "Persisted again", game_id: 31337 }),
      });
      // The admin key and the project both survived the restart.
      expect(again.status).toBe(409);
      expect((await again.json()).code).toBe("already_exists");
    } finally {
      expect(await second.stop()).toBe(0);
    }
  });

  it("refuses to start with invalid configuration, naming the variable", async () => {
    const child = spawn(TSX, ["src/main.ts"], {
      env: { ...process.env, PORT: "eighty" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const [code] = (await once(child, "exit")) as [number | null];
    expect(code).toBe(2);
    expect(stderr).toContain("PORT must be an integer");
  });

  it("without MONGODB_URI, a mongod or go, says in one line what would do and exits 2", async () => {
    // A PATH holding node and nothing else, and a build cache without FerretDB in it.
    const bare = await mkdtemp(path.join(os.tmpdir(), "platform-bare-"));
    try {
      await symlink(process.execPath, path.join(bare, "node"));
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        PATH: bare,
        XDG_CACHE_HOME: bare,
        DATA_DIR: path.join(bare, "data"),
        PORT: "0",
      };
      delete env.MONGODB_URI;
      delete env.MONGOD_BINARY;
      const { code, stderr } = await startUntilExit(env);
      expect(code).toBe(2);
      expect(stderr).toHaveLength(1);
      expect(stderr[0]).toMatch(/MONGODB_URI.*mongod.*Go >= 1\.24/);
    } finally {
      await rm(bare, { recursive: true, force: true });
    }
  });

  it("on a port another process listens on, names PORT in one line and exits 2, having started nothing", async () => {
    const occupant = net.createServer();
    occupant.listen(0, "127.0.0.1");
    await once(occupant, "listening");
    const { port } = occupant.address() as net.AddressInfo;
    // The embedded engine ("" is no MONGODB_URI), which the refusal must come before.
    const unstartedDir = path.join(dataDir, "never-created");
    const main = await spawnMain({ PORT: String(port), MONGODB_URI: "", DATA_DIR: unstartedDir });
    try {
      expect(await main.exited).toBe(2);
      expect(main.stderr).toEqual([
        `refusing to start: PORT ${port} is in use by another process: stop it, or set PORT to a free port`,
      ]);
      // Its one log line above info is the refusal, with no error or stack in it or any other line.
      expect(main.logs.filter((line) => Number(line.level) > 30).map((line) => line.msg)).toEqual([
        "refusing to start",
      ]);
      expect(main.logs.filter((line) => "err" in line || JSON.stringify(line).includes("stack"))).toEqual([]);
      expect(existsSync(unstartedDir)).toBe(false);
      expect(await processesNaming(unstartedDir)).toEqual([]);
    } finally {
      occupant.close();
    }
  });
});

/** The pids of the processes whose command line names `text` (an engine started on a DATA_DIR names it). */
async function processesNaming(text: string): Promise<string[]> {
  const pids = (await readdir("/proc")).filter((name) => /^\d+$/.test(name));
  const named = await Promise.all(
    pids.map(async (pid) =>
      (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).includes(text) ? pid : "",
    ),
  );
  return named.filter((pid) => pid !== "");
}
