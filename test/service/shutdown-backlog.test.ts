import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnMain, waitFor, type MainProcess } from "../support/service/main-process.js";
import { ADMIN_KEY } from "../support/service/service.js";

/** docs/operations.md, "Shutdown": a stop takes at most 10 s, then the engine stops. */
const DOCUMENTED_STOP_MS = 10_000;
/** Room for the engine's own stop and a loaded machine. */
const MARGIN_MS = 5_000;
const PLAYERS = 50_000;

let dataDir: string;
const started: MainProcess[] = [];
beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "platform-stop-"));
});
afterAll(async () => {
  await Promise.all(started.map((main) => main.stop()));
  await rm(dataDir, { recursive: true, force: true });
});

async function start(): Promise<MainProcess> {
  const main = await spawnMain({
    DATA_DIR: dataDir,
    DB_NAME: "stop",
    PLATFORM_ADMIN_KEY: ADMIN_KEY,
    RATE_LIMIT_PER_SECOND: "0",
  });
  started.push(main);
  await main.serving;
  return main;
}

async function post(main: MainProcess, path: string, key: string, body: unknown): Promise<any> {
  const res = await fetch(main.baseUrl + path, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

const queueDepth = async (main: MainProcess) =>
  ((await (await fetch(`${main.baseUrl}/readyz`)).json()) as { events?: { queue_depth: number } }).events
    ?.queue_depth ?? -1;

describe("SIGTERM with a backlog", () => {
  it("exits within the documented time, and the next start counts every event exactly once", async () => {
    const first = await start();
    const project = await post(first, "/v1/admin/projects", ADMIN_KEY, { name: "Stop", game_id: 7_310_001 });
    const timestamp = new Date(Date.now() - 60_000).toISOString();
    const day = timestamp.slice(0, 10);
    for (let from = 0; from < PLAYERS; from += 1000) {
      const events = Array.from({ length: 1000 }, (_, k) => ({ name: "play", device_id: `d-${from + k}`, timestamp }));
      await post(first, "/v1/events", project.public_key, { events });
    }
    // Half applied, the rest waiting in the queue.
    await waitFor(async () => (await queueDepth(first)) <= PLAYERS / 2, 300_000, "half the events applied");
    const stopping = Date.now();
    expect(await first.stop()).toBe(0);
    expect(Date.now() - stopping).toBeLessThan(DOCUMENTED_STOP_MS + MARGIN_MS);

    const next = await start();
    await waitFor(async () => (await queueDepth(next)) === 0, 600_000, "the queue drained");
    const trends = await post(next, "/v1/events/trends", project.private_key, { from: day, to: day, names: ["play"] });
    expect(trends.series[0].points).toEqual([expect.objectContaining({ events: PLAYERS, players: PLAYERS })]);
    expect(await next.stop()).toBe(0);
  }, 1_200_000);
});
