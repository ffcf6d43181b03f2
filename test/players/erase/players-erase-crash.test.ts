import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, inject, it } from "vitest";
import { bruteForce, byName, eventTimes, queueOf, waitFor } from "../../support/service/events.js";
import { startTestService, type TestService } from "../../support/service/service.js";

// An erasure killed (`kill -9`) at its commit point, its markers over the profiles written and nothing after them
// (test/support/service/crash-child.ts): no answer reached the client. The next start's repair takes the player out
// of the sets of the players (the profile is gone already); the client's retry of the call, the erasure's unfinished
// steps (activity, raw events, links); after it every read answers as if the player never existed, across another
// start too.
const CHILD = fileURLToPath(new URL("../../support/service/crash-child.ts", import.meta.url));

/** The service reads the sets as the crash left them: it keeps nothing of what it read (another process wrote). */
const SETS_AS_STORED = { CACHE_MB: "0" };
const PLAYERS = ["ann", "ben", "gone"];
const tagsOf = (player: string) => (player === "gone" ? ["red", "vip"] : ["red"]);

/** Runs the crash child's erasure of `partner` to its death; resolves with the signal that ended it. */
function crashChild(svc: TestService, projectId: string, partner: string): Promise<NodeJS.Signals | null> {
  return new Promise((resolve, reject) => {
    const args = ["--import", "tsx", CHILD, inject("mongodbUri"), svc.config.dbName, projectId, partner];
    const child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "inherit"] });
    child.on("error", reject);
    child.on("exit", (_code, signal) => resolve(signal));
  });
}

const stop = async (svc: TestService) => {
  await svc.service.close(1_000);
  await svc.database.close();
};

describe("an erasure and a kill -9 at its commit point", () => {
  it("is taken out of the sets by the next start, finished by the retry, and stays erased", async () => {
    const first = await startTestService(SETS_AS_STORED);
    const { projectId, publicKey, privateKey } = await first.createProject();
    const times = eventTimes(first, 2);
    const days = times.map((t) => t.day);
    const players = PLAYERS.map((p) => ({ partner_user_id: p, tags: tagsOf(p) }));
    await first.postOk(
      "/v1/players/update",
      { players: [...players, { partner_user_id: "gone", device_id: "gdev" }] },
      privateKey,
    );
    const events = PLAYERS.flatMap((player, i) =>
      times.slice(i % 2).map(({ timestamp }) => ({ name: "play", partner_user_id: player, timestamp })),
    );
    const deviceEvents = times.map(({ timestamp }) => ({ name: "open", device_id: "gdev", timestamp }));
    await first.postOk("/v1/events", { events: [...events, ...deviceEvents] }, publicKey);
    await waitFor(
      () => queueOf(first),
      (queue) => queue.queue_depth === 0,
    );

    expect(await crashChild(first, projectId, "gone")).toBe("SIGKILL");
    const counts = async (svc: TestService) => {
      const { tags } = await svc.postOk("/v1/players/tags", { page: 1, page_size: 100 }, privateKey);
      return Object.fromEntries(tags.map((t: any) => [t.tag, t.players_count]));
    };
    // At the kill: the profile is erased (the markers), its sets are not.
    expect((await first.postOk("/v1/players/get", { partner_user_id: "gone" }, privateKey)).found).toBe(false);
    expect(await counts(first)).toEqual({ red: 3, vip: 1 });
    await stop(first);

    const expectErased = async (svc: TestService) => {
      const read = (path: string, body: object) => svc.postOk(path, body, privateKey);
      expect((await read("/v1/players/get", { partner_user_id: "gone" })).found).toBe(false);
      expect((await read("/v1/players/get", { device_id: "gdev" })).found).toBe(false);
      expect(await counts(svc)).toEqual({ red: 2, vip: 0 });
      const found = await read("/v1/players/search", { tags: ["red", "vip"], page_size: 100 });
      expect(found.players.map((p: { partner_user_id: string }) => p.partner_user_id)).toEqual(["ann", "ben"]);
      const kept = events.filter((e) => e.partner_user_id !== "gone");
      const raw = kept.map((e) => ({ name: e.name, player: e.partner_user_id, day: e.timestamp.slice(0, 10) }));
      for (const [filter, want] of [
        [{}, bruteForce(raw, days)],
        [{ tags: ["red"] }, bruteForce(raw, days)],
        [{ tags: ["vip"] }, bruteForce([], days)],
      ] as const) {
        const trends = await read("/v1/events/trends", { from: days[0], to: days[1], ...filter });
        expect([...byName(trends)], JSON.stringify(filter)).toEqual([...want]);
      }
    };

    // The next start's repair: the player out of the sets of the players.
    const second = await startTestService({ ...SETS_AS_STORED, DB_NAME: first.config.dbName });
    try {
      expect(await counts(second)).toEqual({ red: 2, vip: 0 });
      // The retry finishes the erasure (the device still linked: the project knew the player).
      expect(await second.postOk("/v1/players/delete", { partner_user_id: "gone" }, privateKey)).toEqual({
        deleted: true,
        identity_key: "u:gone",
      });
      await expectErased(second);
    } finally {
      await stop(second);
    }
    const third = await startTestService({ ...SETS_AS_STORED, DB_NAME: first.config.dbName });
    try {
      await expectErased(third);
    } finally {
      await stop(third);
    }
  }, 240_000);
});
