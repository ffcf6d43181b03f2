import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { MongoClient } from "mongodb";
import { inject } from "vitest";
import { loadConfig } from "../../../src/config.js";
import { startEmbeddedDb, type EmbeddedDb } from "../../../src/db/embedded.js";
import { createLogger } from "../../../src/log.js";
import { startMongoJavaServer } from "./mongo-java-server.js";

/** A supervised embedded FerretDB of the test's own, in a fresh folder, which the test may stop or kill. */
export async function startOwnFerretDb(): Promise<{
  embedded: EmbeddedDb;
  dataDir: string;
  stop: () => Promise<void>;
}> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "platform-own-engine-"));
  const embedded = await startEmbeddedDb({
    kind: "ferretdb",
    dataDir,
    mongodBinary: undefined,
    buildCacheDir: loadConfig().buildCacheDir,
    log: createLogger("silent"),
  });
  return {
    embedded,
    dataDir,
    stop: async () => {
      await embedded.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A database server of the test's own, of the kind the run's shared one is (the vitest project's engine): the
 * embedded FerretDB, or mongo-java-server. `pid` is its process, which a test may stop with SIGSTOP.
 */
export async function startOwnEngine(): Promise<{ uri: string; pid: number; stop: () => Promise<void> }> {
  const shared = new MongoClient(inject("mongodbUri"));
  const isFerretDb = "ferretdbVersion" in (await shared.db("admin").command({ buildInfo: 1 }));
  await shared.close();
  if (isFerretDb) {
    const own = await startOwnFerretDb();
    return { uri: own.embedded.uri, pid: own.embedded.pid!, stop: own.stop };
  }
  return startMongoJavaServer(createLogger("silent"));
}
