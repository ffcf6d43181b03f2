import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { loadConfig } from "../../src/config.js";
import { startEmbeddedDb, type EmbeddedDb } from "../../src/db/embedded.js";
import { createLogger } from "../../src/log.js";

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
