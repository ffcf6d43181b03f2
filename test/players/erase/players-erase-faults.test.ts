import { describe, expect, it } from "vitest";
import { commandOn, suiteBehindProxy } from "../../support/db/db-proxy.js";
import { bruteForce, byName, eventTimes, queueOf, waitFor } from "../../support/service/events.js";
import { completionsDone } from "../../support/service/metrics.js";

// players/delete when the database fails: before its commit point (the write of the markers over the profiles) a 503
// erased nothing, the worker's work included; after it, a 503 left the profiles erased and the service finishes the
// rest behind it, unless the player is written again first (then the client's retry does).
const suite = suiteBehindProxy({ DB_TIMEOUT_MS: "1000" });

/** A project with ann (red) and gone (red, vip, with a linked device gdev), events of each applied. */
async function project() {
  const { publicKey, privateKey } = await suite.svc.createProject();
  const post = async (path: string, body: object) => (await suite.svc.postJson(path, body, privateKey)).body;
  const times = eventTimes(suite.svc, 2);
  const days = times.map((t) => t.day);
  await post("/v1/players/update", {
    players: [
      { partner_user_id: "ann", tags: ["red"] },
      { partner_user_id: "gone", device_id: "gdev", tags: ["red", "vip"] },
    ],
  });
  const raw: { name: string; player: string; day: string }[] = [];
  /** Sends `count` events of `who` and waits until the worker applied them (and every segment queued before). */
  const send = async (who: { partner_user_id: string } | { device_id: string }, player: string, count: number) => {
    const events = Array.from({ length: count }, (_, i) => ({
      name: "play",
      ...who,
      timestamp: times[i % 2].timestamp,
    }));
    for (const e of events) raw.push({ name: e.name, player, day: e.timestamp.slice(0, 10) });
    expect((await suite.svc.postOk("/v1/events", { events }, publicKey)).accepted).toBe(count);
    await waitFor(
      () => queueOf(suite.svc),
      (queue) => queue.queue_depth === 0,
    );
  };
  await send({ partner_user_id: "ann" }, "ann", 2);
  await send({ partner_user_id: "gone" }, "gone", 3);
  await send({ device_id: "gdev" }, "gone", 2);

  /** Search, tag counts and trends with exactly `players`, each against the brute force. */
  const expectReads = async (players: string[]) => {
    const kept = raw.filter((e) => players.includes(e.player));
    const label = players.join();
    const search = await post("/v1/players/search", { tags: ["red", "vip"], page_size: 100 });
    expect(
      search.players.map((p: { identity_key: string }) => p.identity_key),
      label,
    ).toEqual(players.map((p) => `u:${p}`));
    const { tags } = await post("/v1/players/tags", { page_size: 100 });
    const counts = Object.fromEntries(
      tags.map((t: { tag: string; players_count: number }) => [t.tag, t.players_count]),
    );
    expect(counts, label).toEqual({ red: players.length, vip: players.includes("gone") ? 1 : 0 });
    for (const filter of [{}, { tags: ["red"] }, { tags: ["vip"] }]) {
      const trends = await post("/v1/events/trends", { from: days[0], to: days[1], ...filter });
      const counted = filter.tags?.includes("vip") ? kept.filter((e) => e.player === "gone") : kept;
      expect(byName(trends), `${label} ${JSON.stringify(filter)}`).toEqual(bruteForce(counted, days));
    }
  };
  const expectFound = async (found: boolean) => {
    expect(await post("/v1/players/get", { partner_user_id: "gone" })).toMatchObject({ found });
    const byDevice = found ? { found, profile: { identity_key: "u:gone", tags: ["red", "vip"] } } : { found };
    expect(await post("/v1/players/get", { device_id: "gdev" })).toMatchObject(byDevice);
  };
  const erase = () => suite.svc.postJson("/v1/players/delete", { partner_user_id: "gone" }, privateKey);
  return { post, send, expectReads, expectFound, erase };
}

describe("players/delete cut off by a database failure", () => {
  it("before its commit point: 503, the player whole (profile, device link, search, counts, trends); a retry erases", async () => {
    const p = await project();
    await p.expectReads(["ann", "gone"]);

    const cut = suite.proxy.cutAt(suite.svc.database.client, commandOn("update", "player_profiles"));
    expect((await p.erase()).status).toBe(503);
    await cut;
    await suite.proxy.restoreFor(suite.svc.baseUrl);
    // An event applied after the failure: whatever the failed call queued before it is applied too.
    await p.send({ partner_user_id: "ann" }, "ann", 1);
    await p.expectFound(true);
    await p.expectReads(["ann", "gone"]);

    expect((await p.erase()).body).toEqual({ deleted: true, identity_key: "u:gone" });
    await p.expectFound(false);
    await p.expectReads(["ann"]);
    await p.send({ partner_user_id: "ann" }, "ann", 1);
    await p.expectReads(["ann"]);
  });

  it("after its commit point: 503 with the profile erased; the service finishes the erasure behind it", async () => {
    const p = await project();
    suite.proxy.cutAfter(suite.svc.database.client, commandOn("update", "player_profiles"));
    expect((await p.erase()).status).toBe(503);
    await suite.proxy.restoreFor(suite.svc.baseUrl);
    expect(await p.post("/v1/players/get", { partner_user_id: "gone" })).toMatchObject({ found: false });

    // No retry: the player leaves every count.
    await completionsDone(suite.svc);
    await p.expectFound(false);
    await p.expectReads(["ann"]);
    // A retry finds nothing of the player left, their device link included.
    expect((await p.erase()).body).toEqual({ deleted: false, identity_key: "u:gone" });
    await p.send({ partner_user_id: "ann" }, "ann", 1);
    await p.expectReads(["ann"]);
  });

  it("after its commit point, a write of the player before the erasure is finished: the rest is left to the retry", async () => {
    const p = await project();
    // The erasure's segment cannot be written: its markers are, then its finish fails, behind the 503 too.
    suite.proxy.failCommandsHolding("event_segments");
    expect((await p.erase()).status).toBe(503);
    expect(await p.post("/v1/players/get", { partner_user_id: "gone" })).toMatchObject({ found: false });
    const again = { players: [{ partner_user_id: "gone", tags: ["red", "vip"] }] };
    expect(await p.post("/v1/players/update", again)).toMatchObject({ success: true });
    await suite.proxy.restoreFor(suite.svc.baseUrl);

    // The player written again keeps the device link and the events the erasure had not taken out yet.
    await completionsDone(suite.svc);
    await p.expectFound(true);
    await p.expectReads(["ann", "gone"]);
    expect((await p.erase()).body).toEqual({ deleted: true, identity_key: "u:gone" });
    await p.expectFound(false);
    await p.expectReads(["ann"]);
  });
});
