import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { loadConfig } from "../../../src/config.js";
import { ensureDashboardBuilt } from "../../../src/dashboard/build.js";
import { startEmbeddedDb, type EmbeddedDb } from "../../../src/db/embedded.js";
import { createLogger } from "../../../src/log.js";

declare module "vitest" {
  export interface ProvidedContext {
    mongodbUri: string;
  }
}

let embedded: EmbeddedDb | undefined;
let dataDir: string | undefined;

/** One database server for the whole run: MONGODB_URI if set, else the embedded one in a fresh temporary folder. */
export async function setup(project: TestProject): Promise<void> {
  // A fresh clone has no built dashboard; the service serves it and the browser suite drives it.
  await ensureDashboardBuilt();
  let uri = process.env.MONGODB_URI;
  if (!uri) {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "platform-test-"));
    embedded = await startEmbeddedDb({
      kind: (process.env.EMBEDDED_DB as "auto" | "mongod" | "ferretdb" | undefined) ?? "auto",
      dataDir,
      mongodBinary: process.env.MONGOD_BINARY,
      buildCacheDir: loadConfig().buildCacheDir,
      log: createLogger("info"),
    });
    uri = embedded.uri;
  }
  project.provide("mongodbUri", uri);
}

export async function teardown(): Promise<void> {
  await embedded?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}
