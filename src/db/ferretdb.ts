import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "../log.js";
import { freePort, runCommand, stopProcess, waitForMongo } from "./process.js";

/** The Go wrapper around FerretDB's embeddable package (see tools/ferretdb/main.go). */
const SOURCE_DIR = fileURLToPath(new URL("../../tools/ferretdb/", import.meta.url));
const SOURCE_FILES = ["go.mod", "go.sum", "main.go"];

export interface RunningFerretDb {
  uri: string;
  stop(): Promise<void>;
}

/**
 * Returns the path of the FerretDB binary, building it with `go` the first time.
 * The cache folder is keyed by a hash of the wrapper's sources, so a change to
 * them (a FerretDB upgrade) builds again.
 */
export async function ensureFerretDbBinary(log: Logger): Promise<string> {
  const hash = createHash("sha256");
  for (const file of SOURCE_FILES) hash.update(await readFile(path.join(SOURCE_DIR, file)));
  const cacheRoot = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache");
  const dir = path.join(cacheRoot, "platform-backend", `ferretdb-${hash.digest("hex").slice(0, 12)}`);
  const binary = path.join(dir, "ferretdb");
  if (existsSync(binary)) return binary;

  await mkdir(dir, { recursive: true });
  log.info({ dir }, "building FerretDB 1.24 with go, once (a few minutes on a fresh machine)");
  const started = Date.now();
  const progress = setInterval(
    () => log.info({ seconds: Math.round((Date.now() - started) / 1000) }, "still building FerretDB"),
    15_000,
  );
  // Build beside the final name and rename, so a concurrent start never runs a half-written file.
  const partial = `${binary}.${process.pid}.partial`;
  try {
    await runCommand("go", ["build", "-o", partial, "."], {
      cwd: SOURCE_DIR,
      env: { ...process.env, GOFLAGS: "-mod=mod", CGO_ENABLED: "0" },
      onLine: (line) => log.info({ go: line }, "building FerretDB"),
    });
  } finally {
    clearInterval(progress);
  }
  await rename(partial, binary);
  log.info({ seconds: Math.round((Date.now() - started) / 1000) }, "FerretDB built");
  return binary;
}

/** Starts FerretDB with its SQLite backend on a free loopback port, keeping its files in `dataDir`. */
export async function startFerretDb(dataDir: string, log: Logger): Promise<RunningFerretDb> {
  const binary = await ensureFerretDbBinary(log);
  await mkdir(dataDir, { recursive: true });
  const port = await freePort();
  const child: ChildProcess = spawn(
    binary,
    [
      `--listen-addr=127.0.0.1:${port}`,
      "--handler=sqlite",
      `--sqlite-url=file:${dataDir}/`,
      "--telemetry=disable",
      "--log-level=error",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  child.stderr?.on("data", (chunk: Buffer) => log.warn({ ferretdb: chunk.toString().trim() }, "ferretdb"));
  const uri = `mongodb://127.0.0.1:${port}/`;
  try {
    await waitForMongo(uri, child);
  } catch (error) {
    await stopProcess(child);
    throw error;
  }
  return { uri, stop: () => stopProcess(child) };
}
