import { describe, expect, it } from "vitest";
import { bruteForce, byName } from "../support/events.js";
import { postTo, suiteProcesses, waitFor, type MainProcess } from "../support/main-process.js";
import { ADMIN_KEY } from "../support/service.js";

// An erasure acknowledged, then `kill -9` before the owner wrote behind what follows it (membership and counts, the
// erased histories): the next start on the same database still answers as if the players never existed.
const DAY_MS = 86_400_000;
const PLAYERS = ["ann", "ben", "gone1", "gone2"];
const tagsOf = (player: string) => (player.startsWith("gone") ? ["red", "vip"] : ["red"]);

const processes = suiteProcesses("erase");

async function start(env: Record<string, string> = {}): Promise<MainProcess> {
  const main = await processes.start({ DATA_DIR: processes.dataDir, ...env });
  expect(await main.outcome).toBe("serving");
  return main;
}

const post = postTo;

async function metric(main: MainProcess, name: string): Promise<number> {
  const text = await (await fetch(`${main.baseUrl}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? NaN);
}

const drained = (main: MainProcess) =>
  waitFor(
    async () => (await (await fetch(`${main.baseUrl}/readyz`)).json()).events?.queue_depth === 0,
    120_000,
    "the queue to be applied",
  );

/** Until the owner wrote its membership and every recorded change is settled: nothing left behind the rounds. */
const settled = (main: MainProcess) =>
  waitFor(
    async () =>
      (await metric(main, "platform_owner_membership_unwritten")) === 0 &&
      (await metric(main, "platform_owner_changes_unsettled")) === 0,
    120_000,
    "the rounds to be settled",
  );

describe("an erasure and a kill -9 before what follows it is written behind", () => {
  it("is still erased after the next start: profile, counts, search and trends", async () => {
    const first = await start();
    const { public_key: publicKey, private_key: privateKey } = await post(
      first,
      "/v1/admin/projects",
      { name: "Erase", game_id: 5_002 },
      ADMIN_KEY,
    );
    const last = Date.now() - 60_000;
    const times = [last - DAY_MS, last].map((ms) => new Date(ms).toISOString());
    const days = times.map((time) => time.slice(0, 10));
    await post(
      first,
      "/v1/players/update",
      { players: PLAYERS.map((p) => ({ partner_user_id: p, tags: tagsOf(p) })) },
      privateKey,
    );
    const events = PLAYERS.flatMap((player, i) =>
      times.slice(i % 2).map((timestamp) => ({ name: "play", partner_user_id: player, timestamp })),
    );
    await post(first, "/v1/events", { events }, publicKey);
    await drained(first);
    await settled(first);

    // One erasure settled (only the next record takes it out of the database), one just answered.
    expect(await post(first, "/v1/players/delete", { partner_user_id: "gone1" }, privateKey)).toEqual({
      deleted: true,
      identity_key: "u:gone1",
    });
    await settled(first);
    await post(first, "/v1/players/delete", { partner_user_id: "gone2" }, privateKey);
    expect(await metric(first, "platform_owner_membership_unwritten")).toBeGreaterThan(0);
    first.child.kill("SIGKILL");
    await first.exited;

    const next = await start();
    await drained(next);
    const read = (path: string, body: object) => post(next, path, body, privateKey);
    for (const gone of ["gone1", "gone2"]) {
      expect((await read("/v1/players/get", { partner_user_id: gone })).found).toBe(false);
    }
    const { tags } = await read("/v1/players/tags", { page: 1, page_size: 100 });
    expect(Object.fromEntries(tags.map((t: any) => [t.tag, t.players_count]))).toEqual({ red: 2, vip: 0 });
    const found = await read("/v1/players/search", { tags: ["red", "vip"], page_size: 100 });
    expect(found.players.map((p: { partner_user_id: string }) => p.partner_user_id)).toEqual(["ann", "ben"]);
    const kept = events.filter((e) => !e.partner_user_id.startsWith("gone"));
    const raw = kept.map((e) => ({ name: e.name, player: e.partner_user_id, day: e.timestamp.slice(0, 10) }));
    for (const [filter, want] of [
      [{}, bruteForce(raw, days)],
      [{ tags: ["red"] }, bruteForce(raw, days)],
      [{ tags: ["vip"] }, bruteForce([], days)],
    ] as const) {
      const trends = await read("/v1/events/trends", { from: days[0], to: days[1], ...filter });
      expect([...byName(trends)], JSON.stringify(filter)).toEqual([...want]);
    }
    expect(await next.stop()).toBe(0);
  }, 240_000);
});
