import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, readFile } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "../log.js";
import { ensureFerretDbBinary } from "./ferretdb-build.js";
import { DatabaseInUseError, freePort, waitForMongo } from "./process.js";
import { superviseProcess, type SupervisedProcess } from "./supervisor.js";

/** Exit code of tools/ferretdb when another process holds the data folder's lock. */
const EXIT_LOCKED = 75;

export interface RunningFerretDb {
  uri: string;
  /** The process id of the current FerretDB run. */
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

/**
 * Starts FerretDB with its SQLite backend on a loopback port, keeping its files
 * in `dataDir`, and restarts it on the same port whenever it dies, so the
 * driver reconnects by itself. Throws DatabaseInUseError when another process
 * runs FerretDB on `dataDir`.
 */
/** The size SQLite cuts its write-ahead log back to once a checkpoint has copied it all (journal_size_limit). */
export const WAL_SIZE_LIMIT_BYTES = 8 * 1024 * 1024;

export async function startFerretDb(options: {
  dataDir: string;
  /** Where the binary is built once and kept. */
  buildCacheDir: string;
  log: Logger;
}): Promise<RunningFerretDb> {
  const { dataDir, log } = options;
  const binary = await ensureFerretDbBinary(options.buildCacheDir, log);
  await mkdir(dataDir, { recursive: true });
  const port = await freePort();
  const uri = `mongodb://127.0.0.1:${port}/`;
  const lockFile = path.join(dataDir, "ferretdb.lock");
  const start = (): ChildProcess => {
    const child = spawn(
      binary,
      [
        `--listen-addr=127.0.0.1:${port}`,
        "--handler=sqlite",
        // WAL (FerretDB's default) with synchronous=NORMAL: no fsync on each commit. A crash of the process loses
        // nothing; a power loss may lose the last commits, never the database. This is the development database.
        // SQLite never shrinks the log by itself: journal_size_limit cuts it back once a checkpoint has emptied it.
        `--sqlite-url=file:${dataDir}/?_pragma=synchronous(normal)&_pragma=journal_size_limit(${WAL_SIZE_LIMIT_BYTES})`,
        "--telemetry=disable",
        "--log-level=error",
        `--lock-file=${lockFile}`,
        // FerretDB exits when this process dies, however it dies, instead of holding the lock and the port.
        "--exit-with-stdin",
      ],
      { stdio: ["pipe", "ignore", "pipe"] },
    );
    child.stderr?.on("data", (chunk: Buffer) => log.warn({ ferretdb: chunk.toString().trim() }, "ferretdb"));
    return child;
  };
  const ready = async (child: ChildProcess): Promise<void> => {
    try {
      await waitForMongo(uri, child);
    } catch (error) {
      if (child.exitCode !== EXIT_LOCKED) throw error;
      const owner = await readFile(lockFile, "utf8").catch(() => "");
      throw new DatabaseInUseError(dataDir, `FerretDB process ${owner.trim() || "unknown"} holds ${lockFile}`);
    }
    log.info({ childPid: child.pid, uri }, "embedded FerretDB serving");
  };
  const supervised: SupervisedProcess = await superviseProcess({ name: "embedded FerretDB", spawn: start, ready, log });
  return {
    uri,
    get pid() {
      return supervised.pid;
    },
    stop: () => supervised.stop(),
  };
}
