import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnMain, type MainProcess } from "../support/service/main-process.js";
import { ADMIN_KEY } from "../support/service/service.js";

// Instances of `npm start` on one embedded database: the first owns it, a second must refuse, never lose writes.
let dataDir: string;
const started: MainProcess[] = [];
beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "platform-ownership-"));
});
afterAll(async () => {
  await Promise.all(started.map((p) => p.stop()));
  await rm(dataDir, { recursive: true, force: true });
});

async function start(env: Record<string, string>): Promise<MainProcess> {
  const main = await spawnMain({ DB_NAME: "ownership", PLATFORM_ADMIN_KEY: ADMIN_KEY, ...env });
  started.push(main);
  return main;
}

function embeddedUri(main: MainProcess): string {
  const line = main.logs.find((log) => log.msg === "embedded FerretDB serving");
  if (typeof line?.uri !== "string") throw new Error("the first instance logged no FerretDB address");
  return line.uri;
}

async function createProject(main: MainProcess, gameId: number): Promise<number> {
  const res = await fetch(`${main.baseUrl}/v1/admin/projects`, {
    method: "POST",
    headers: { "x-api-key": ADMIN_KEY, "content-type": "application/json" },
    body: JSON.stringify({ name: "Owned", game_id: gameId }),
  });
  return res.status;
}

describe("one instance owns an embedded database", () => {
  it("refuses a second instance on the same DATA_DIR, and one given the first one's FerretDB", async () => {
    const first = await start({ DATA_DIR: dataDir });
    await first.serving;
    expect(await createProject(first, 4001)).toBe(200);

    const sameDir = await start({ DATA_DIR: dataDir });
    expect(await sameDir.outcome).toBe(1);
    const refusal = sameDir.stderr.join("\n");
    expect(refusal).toContain("refusing to start: the embedded database in");
    expect(refusal).toContain("is in use by another process");
    expect(refusal).toContain("One service instance owns an embedded database");

    const sameServer = await start({ MONGODB_URI: embeddedUri(first) });
    expect(await sameServer.outcome).toBe(1);
    expect(sameServer.stderr.join("\n")).toContain(
      'refusing to start: another service instance owns database "ownership" on this FerretDB',
    );

    // The owner never noticed.
    expect((await fetch(`${first.baseUrl}/readyz`)).status).toBe(200);
    expect(await createProject(first, 4002)).toBe(200);
    expect(await first.stop()).toBe(0);
  });

  it("lets the next instance start at once after the owner was killed (no orphaned FerretDB, no waiting for the lease)", async () => {
    const owner = await start({ DATA_DIR: dataDir });
    await owner.serving;
    owner.child.kill("SIGKILL");
    await owner.exited;

    const next = await start({ DATA_DIR: dataDir });
    await next.serving;
    expect(await createProject(next, 4001)).toBe(409); // the data of the first test is still there
    expect(await next.stop()).toBe(0);
  });
});
