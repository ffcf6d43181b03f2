import { execFileSync } from "node:child_process";
import { lookup } from "node:dns/promises";
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { MongoMemoryServer } from "mongodb-memory-server-core";
import type { EmbeddedDbKind } from "../config.js";
import type { Logger } from "../log.js";
import { startFerretDb } from "./ferretdb.js";

export interface EmbeddedDb {
  kind: "mongod" | "ferretdb";
  uri: string;
  stop(): Promise<void>;
}

export interface EmbeddedDbOptions {
  kind: EmbeddedDbKind;
  /** Folder for the database files; each engine keeps its own subfolder. */
  dataDir: string;
  mongodBinary: string | undefined;
  log: Logger;
}

/**
 * Starts a MongoDB-compatible server on loopback, in the order of DESIGN.md:
 * a `mongod` (MONGOD_BINARY, on PATH, or downloaded by mongodb-memory-server
 * where the internet is reachable), else FerretDB built with `go`.
 */
export async function startEmbeddedDb(options: EmbeddedDbOptions): Promise<EmbeddedDb> {
  const { kind, log } = options;
  if (kind !== "ferretdb") {
    try {
      return await startMongod(options);
    } catch (error) {
      if (kind === "mongod") throw error;
      log.info({ reason: (error as Error).message }, "no mongod available; using FerretDB");
    }
  }
  const dbPath = path.join(options.dataDir, "ferretdb");
  const ferret = await startFerretDb(dbPath, log);
  log.info({ dbPath }, "embedded FerretDB started");
  return { kind: "ferretdb", ...ferret };
}

async function startMongod({ dataDir, mongodBinary, log }: EmbeddedDbOptions): Promise<EmbeddedDb> {
  const dbPath = path.join(dataDir, "mongod");
  await mkdir(dbPath, { recursive: true });
  const systemBinary = mongodBinary ?? findOnPath("mongod");
  if (!systemBinary) await assertDownloadHostResolves();
  const server = await MongoMemoryServer.create({
    instance: { dbPath, storageEngine: "wiredTiger", ip: "127.0.0.1" },
    binary: systemBinary ? { systemBinary } : {},
  });
  log.info({ dbPath, systemBinary }, "embedded mongod started");
  return {
    kind: "mongod",
    uri: server.getUri(),
    stop: async () => {
      await server.stop({ doCleanup: false });
    },
  };
}

/** Fails fast, without mongodb-memory-server's noisy retries, where its download host cannot even be resolved. */
async function assertDownloadHostResolves(): Promise<void> {
  const host = new URL(process.env.MONGOMS_DOWNLOAD_MIRROR ?? "https://fastdl.mongodb.org").hostname;
  try {
    await lookup(host);
  } catch {
    throw new Error(`no mongod on PATH and ${host} is unreachable`);
  }
}

function findOnPath(command: string): string | undefined {
  try {
    const found = execFileSync("sh", ["-c", `command -v ${command}`], { encoding: "utf8" }).trim();
    return found && existsSync(found) ? found : undefined;
  } catch {
    return undefined;
  }
}
