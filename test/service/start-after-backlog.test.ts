import { describe, expect, inject, it } from "vitest";
import { DbProxy } from "../support/db/db-proxy.js";
import { bruteForce, byName } from "../support/service/events.js";
import { postTo, suiteProcesses, waitFor } from "../support/service/main-process.js";
import { ADMIN_KEY } from "../support/service/service.js";

// `npm start` after the hostile run of a public key during an event backlog (at a size CI affords), and a start whose
// database stops answering its work.
const PLAYERS = 20;
const ROUNDS = 6;
const DAY_MS = 86_400_000;
const players = Array.from({ length: PLAYERS }, (_, i) => `player-${i}-`.padEnd(256, "x"));
const tagSet = (set: "a" | "b") => Array.from({ length: 45 }, (_, i) => `${set}${i}-`.padEnd(64, "t"));

const processes = suiteProcesses("backlog");
const { start } = processes;
const post = postTo;

describe("a start after changes waited behind an event backlog", () => {
  it("after a kill -9: nothing of the answered changes to repair, serves, and answers exactly", async () => {
    const first = await start({ DATA_DIR: processes.dataDir, EVENT_WORKER: "off" });
    await first.serving;
    const { public_key: publicKey, private_key: privateKey } = await post(
      first,
      "/v1/admin/projects",
      { name: "Backlog", game_id: 5_001 },
      ADMIN_KEY,
    );
    // Times in the past, on two consecutive days.
    const last = Date.now() - 60_000;
    const times = [last - DAY_MS, last].map((ms) => new Date(ms).toISOString());
    const days = times.map((time) => time.slice(0, 10));
    const events = players.flatMap((player, i) =>
      times.slice(i % 2).map((timestamp) => ({ name: "play", partner_user_id: player, timestamp })),
    );
    await post(first, "/v1/events", { events }, publicKey);
    for (let round = 1; round <= ROUNDS; round++) {
      const set = round % 2 === 1 ? "b" : "a";
      const entries = players.map((partner_user_id) => ({ partner_user_id, tags: tagSet(set) }));
      await post(first, "/v1/players/update", { players: entries }, publicKey);
    }
    first.child.kill("SIGKILL");
    await first.exited;

    const next = await start({ DATA_DIR: processes.dataDir });
    expect(await next.outcome).toBe("serving");
    // Every round answered had its sets written before it answered: no round is left for the start to complete.
    expect(next.logs.filter((line) => line.msg === "players' sets repaired after a crash")).toEqual([]);
    await waitFor(
      async () => {
        const { events: queue } = await (await fetch(`${next.baseUrl}/readyz`)).json();
        return queue?.queue_depth === 0;
      },
      120_000,
      "the backlog to be applied",
    );

    const raw = events.map((e) => ({ name: e.name, player: e.partner_user_id, day: e.timestamp.slice(0, 10) }));
    const read = (path: string, body: object) => post(next, path, body, privateKey);
    for (const [tag, want] of [
      [tagSet("a")[0], bruteForce(raw, days)],
      [tagSet("b")[0], bruteForce([], days)],
    ] as const) {
      const trends = await read("/v1/events/trends", { from: days[0], to: days[1], tags: [tag] });
      expect([...byName(trends)], tag).toEqual([...want]);
    }
    const found = await read("/v1/players/search", { tags: [tagSet("a")[0]], page_size: 100 });
    expect(found.players.map((p: { partner_user_id: string }) => p.partner_user_id).sort()).toEqual(
      [...players].sort(),
    );
    const { tags } = await read("/v1/players/tags", { page: 1, page_size: 100 });
    const counts = Object.fromEntries(
      tags.map((t: { tag: string; players_count: number }) => [t.tag, t.players_count]),
    );
    expect(counts).toEqual(
      Object.fromEntries([...tagSet("a").map((t) => [t, PLAYERS]), ...tagSet("b").map((t) => [t, 0])]),
    );
    expect(await next.stop()).toBe(0);
  }, 240_000);

  it("whose database stops answering after the lease: one line, no stack, exit 2", async () => {
    const proxy = await DbProxy.start(inject("mongodbUri"));
    try {
      // Every reply is dropped from the start's first command on the players rounds' intents (the sets' repair, after
      // the lease).
      proxy.dropRepliesFrom("player_intents");
      const main = await start({ MONGODB_URI: proxy.uri, DB_NAME: "stalled", DB_TIMEOUT_MS: "500" });
      expect(await main.outcome).toBe(2);
      expect(main.stderr.join("\n")).not.toMatch(/^\s+at /m);
      expect(main.stderr.filter((line) => line.startsWith("refusing to start: "))).toHaveLength(1);
      expect(main.stderr.join("\n")).toContain("the start-up work on the database did not finish");
      const errors = main.logs.filter((line) => Number(line.level) >= 50);
      expect(errors).toHaveLength(1);
      expect(JSON.stringify(errors)).not.toContain("stack");
    } finally {
      await proxy.restore();
      proxy.cut();
    }
  }, 120_000);
});
