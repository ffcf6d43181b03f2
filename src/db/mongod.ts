import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../log.js";
import { DatabaseInUseError, freePort, waitForMongo } from "./process.js";
import { superviseProcess, type SupervisedProcess } from "./supervisor.js";

export interface RunningMongod {
  uri: string;
  /** The process id of the current mongod run. */
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

/**
 * Starts `binary` (a mongod already on this machine: nothing is downloaded) on
 * a loopback port with its files in `dbPath`, and restarts it on the same port
 * whenever it dies. mongod locks `dbPath` itself (mongod.lock); a start refused
 * for that throws DatabaseInUseError.
 */
export async function startMongod(binary: string, dbPath: string, log: Logger): Promise<RunningMongod> {
  await mkdir(dbPath, { recursive: true });
  const port = await freePort();
  const uri = `mongodb://127.0.0.1:${port}/`;
  const start = (): ChildProcess => {
    const child = spawn(binary, ["--dbpath", dbPath, "--port", String(port), "--bind_ip", "127.0.0.1"], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    child.stderr?.on("data", (chunk: Buffer) => log.warn({ mongod: chunk.toString().trim() }, "mongod"));
    return child;
  };
  const ready = async (child: ChildProcess): Promise<void> => {
    try {
      await waitForMongo(uri, child);
    } catch (error) {
      const owner = await lockOwner(dbPath);
      if (owner !== undefined && owner !== child.pid) {
        throw new DatabaseInUseError(dbPath, `mongod process ${owner} holds its mongod.lock`);
      }
      throw error;
    }
    log.info({ childPid: child.pid, uri }, "embedded mongod serving");
  };
  const supervised: SupervisedProcess = await superviseProcess({ name: "embedded mongod", spawn: start, ready, log });
  return {
    uri,
    get pid() {
      return supervised.pid;
    },
    stop: () => supervised.stop(),
  };
}

/** The live process that mongod.lock names, if any (mongod empties the file on a clean exit). */
async function lockOwner(dbPath: string): Promise<number | undefined> {
  const text = await readFile(path.join(dbPath, "mongod.lock"), "utf8").catch(() => "");
  const pid = Number(text.trim());
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}
