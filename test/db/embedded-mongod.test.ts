import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { startEmbeddedDb } from "../../src/db/embedded.js";
import { ensureFerretDbBinary } from "../../src/db/ferretdb-build.js";
import { createLogger } from "../../src/log.js";
import { waitFor } from "../support/service/main-process.js";

// No mongod on this machine, and nothing may be downloaded: a stand-in that takes mongod's flags and serves
// FerretDB shows that MONGOD_BINARY is preferred, started with those flags, and supervised like FerretDB.
const log = createLogger("silent");
const { buildCacheDir } = loadConfig();
let dir: string;
let shim: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "platform-mongod-"));
  shim = path.join(dir, "stand-in-mongod");
  const ferretdb = await ensureFerretDbBinary(buildCacheDir, log);
  await writeFile(
    shim,
    `#!/bin/sh
while [ $# -gt 0 ]; do
  case "$1" in
    --dbpath) dbpath=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --bind_ip) ip=$2; shift 2 ;;
    *) echo "unexpected mongod flag $1" >&2; exit 2 ;;
  esac
done
echo $$ > "$dbpath/mongod.lock"
exec ${ferretdb} --listen-addr=$ip:$port --handler=sqlite --sqlite-url=file:$dbpath/ --telemetry=disable --log-level=error
`,
    { mode: 0o755 },
  );
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function pings(uri: string): Promise<boolean> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 500, directConnection: true });
  try {
    await client.db("admin").command({ ping: 1 });
    return true;
  } catch {
    return false;
  } finally {
    await client.close();
  }
}

describe("the embedded mongod", () => {
  it("runs MONGOD_BINARY with its data in DATA_DIR/mongod, and restarts it on the same port when it dies", async () => {
    const embedded = await startEmbeddedDb({ kind: "auto", dataDir: dir, mongodBinary: shim, buildCacheDir, log });
    try {
      expect(embedded.kind).toBe("mongod");
      expect(embedded.uri).toMatch(/^mongodb:\/\/127\.0\.0\.1:\d+\/$/);
      const pid = embedded.pid!;
      expect(Number(await readFile(path.join(dir, "mongod", "mongod.lock"), "utf8"))).toBe(pid);
      expect(await pings(embedded.uri)).toBe(true);

      process.kill(pid, "SIGKILL");
      await waitFor(async () => embedded.pid !== pid && (await pings(embedded.uri)), 20_000, "mongod to restart");
    } finally {
      await embedded.stop();
    }
  });

  it("refuses a data folder whose mongod.lock names a live process", async () => {
    const first = await startEmbeddedDb({ kind: "mongod", dataDir: dir, mongodBinary: shim, buildCacheDir, log });
    try {
      // The stand-in does not lock like mongod: a second one fails on the port instead. The lock file decides.
      await expect(
        startEmbeddedDb({ kind: "mongod", dataDir: dir, mongodBinary: path.join(dir, "missing"), buildCacheDir, log }),
      ).rejects.toThrow(`mongod process ${first.pid} holds its mongod.lock`);
    } finally {
      await first.stop();
    }
  });
});
