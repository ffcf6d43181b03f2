import { spawn, type ChildProcess } from "node:child_process";
import { mkdir } from "node:fs/promises";
import type { Logger } from "../log.js";
import { ensureFerretDbBinary } from "./ferretdb-build.js";
import { freePort, stopProcess, waitForMongo } from "./process.js";

export interface RunningFerretDb {
  uri: string;
  stop(): Promise<void>;
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
      // WAL (FerretDB's default) with synchronous=NORMAL: no fsync on each commit. A crash of the process loses
      // nothing; a power loss may lose the last commits, never the database. This is the development database.
      `--sqlite-url=file:${dataDir}/?_pragma=synchronous(normal)`,
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
