import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import type { EmbeddedDbKind } from "../config.js";
import type { Logger } from "../log.js";
import { startFerretDb } from "./ferretdb.js";
import { startMongod } from "./mongod.js";

export interface EmbeddedDb {
  kind: "mongod" | "ferretdb";
  uri: string;
  /** The process id of the database's current run (it changes when the supervisor restarts it). */
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

export interface EmbeddedDbOptions {
  kind: EmbeddedDbKind;
  /** Folder for the database files; each engine keeps its own subfolder. */
  dataDir: string;
  mongodBinary: string | undefined;
  /** Where FerretDB is built once and kept (Config.buildCacheDir). */
  buildCacheDir: string;
  log: Logger;
}

/**
 * Starts a MongoDB-compatible server on loopback, in the order of docs/database.md: a
 * `mongod` (MONGOD_BINARY, or on PATH), else FerretDB built with `go`. Either
 * is supervised: restarted with backoff when it dies. Throws DatabaseInUseError
 * when another process already runs it on `dataDir`.
 */
export async function startEmbeddedDb(options: EmbeddedDbOptions): Promise<EmbeddedDb> {
  const { kind, dataDir, log } = options;
  const mongodBinary = kind === "ferretdb" ? undefined : (options.mongodBinary ?? findOnPath("mongod"));
  if (mongodBinary) {
    const mongod = await startMongod(mongodBinary, path.join(dataDir, "mongod"), log);
    return withKind("mongod", mongod);
  }
  if (kind === "mongod") throw new Error("EMBEDDED_DB=mongod, but there is no MONGOD_BINARY and no mongod on PATH");
  log.info("no mongod on PATH; using FerretDB");
  return withKind(
    "ferretdb",
    await startFerretDb({ dataDir: path.join(dataDir, "ferretdb"), buildCacheDir: options.buildCacheDir, log }),
  );
}

function withKind(kind: EmbeddedDb["kind"], server: Omit<EmbeddedDb, "kind">): EmbeddedDb {
  return {
    kind,
    uri: server.uri,
    get pid() {
      return server.pid;
    },
    stop: () => server.stop(),
  };
}

function findOnPath(command: string): string | undefined {
  try {
    const found = execFileSync("sh", ["-c", `command -v ${command}`], { encoding: "utf8" }).trim();
    return found && existsSync(found) ? found : undefined;
  } catch {
    return undefined;
  }
}
