import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { connectDatabase, type Database } from "../../src/db/database.js";
import { startFerretDb, type RunningFerretDb } from "../../src/db/ferretdb.js";
import { createLogger } from "../../src/log.js";
import { startService, type RunningService } from "../../src/server/service.js";
import { ADMIN_KEY } from "../support/service/service.js";

// A service on a database server of its own, which the test then stops.
let dataDir: string;
let ferret: RunningFerretDb;
let database: Database;
let service: RunningService;
beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "platform-unavailable-"));
  const log = createLogger("silent");
  ferret = await startFerretDb({ dataDir, buildCacheDir: loadConfig().buildCacheDir, log });
  const config = loadConfig({ PORT: "0", HOST: "127.0.0.1", PLATFORM_ADMIN_KEY: ADMIN_KEY, LOG_LEVEL: "silent" });
  database = await connectDatabase(ferret.uri, "unavailable");
  service = await startService({ config, database, log });
});
afterAll(async () => {
  await service.close(1_000);
  await database.close();
  await ferret.stop();
  await rm(dataDir, { recursive: true, force: true });
});

describe("database unreachable", () => {
  it("answers 503 unavailable, and /readyz says so while /healthz stays up", async () => {
    const base = `http://127.0.0.1:${service.port}`;
    const before = await fetch(`${base}/readyz`);
    expect(before.status).toBe(200);

    await ferret.stop();

    const res = await fetch(`${base}/v1/admin/entitlements`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": ADMIN_KEY },
      body: JSON.stringify({ platform_user_id: "7f1c2a4e-0000-4000-8000-0000000000aa", game_id: 1 }),
    });
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ code: "unavailable", message: "database unavailable, try again later" });
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });
});
