import { describe, expect, it } from "vitest";
import { commandOn, suiteBehindProxy } from "../../support/db/db-proxy.js";
import { bruteForce, byName, queueOf, waitFor } from "../../support/service/events.js";
import { completionsDone } from "../../support/service/metrics.js";

const suite = suiteBehindProxy({ DB_TIMEOUT_MS: "1000" });

/** A project whose `player` has `count` events two days ago, applied; its keys, the day and the expected trends. */
async function applied(player: string, count: number) {
  const { publicKey, privateKey } = await suite.svc.createProject();
  const at = new Date(suite.svc.clock.now().getTime() - 2 * 86_400_000);
  const day = at.toISOString().slice(0, 10);
  const events = Array.from({ length: count }, () => ({
    name: "play",
    partner_user_id: player,
    timestamp: at.toISOString(),
  }));
  await suite.svc.postOk("/v1/events", { events }, publicKey);
  await waitFor(
    () => queueOf(suite.svc),
    (queue) => queue.queue_depth === 0,
  );
  const expected = bruteForce(
    events.map(() => ({ name: "play", player, day })),
    [day],
  );
  return { publicKey, privateKey, day, expected };
}

/** Until the tag's search and trends count `player` (the round's completion wrote its sets), then what they answer. */
async function counted(player: string, { privateKey, day }: { privateKey: string; day: string }) {
  await waitFor(
    () => suite.svc.postOk("/v1/players/search", { tags: ["vip"] }, privateKey),
    (search) => search.players.length === 1,
  );
  await completionsDone(suite.svc);
  const search = await suite.svc.postOk("/v1/players/search", { tags: ["vip"] }, privateKey);
  expect(search.players.map((p: { identity_key: string }) => p.identity_key)).toEqual([`u:${player}`]);
  return byName(await suite.svc.postOk("/v1/events/trends", { from: day, to: day, tags: ["vip"] }, privateKey));
}

describe("a players round cut off by a database failure after its profiles (its commit point)", () => {
  it("at the write of its sets: the update answers 200, and the sets follow once the database is back", async () => {
    const project = await applied("alice", 3);
    const cut = suite.proxy.cutAt(suite.svc.database.client, commandOn("update", "player_sets"));
    const updated = await suite.svc.postJson(
      "/v1/players/update",
      { players: [{ partner_user_id: "alice", tags_add: ["vip"] }] },
      project.publicKey,
    );
    expect(updated.status).toBe(200);
    await cut;
    await suite.proxy.restoreFor(suite.svc.baseUrl);
    expect(await counted("alice", project)).toEqual(project.expected);
  });

  it("right after the profile's write: the update answers 200, and the sets follow once the database is back", async () => {
    const project = await applied("bob", 2);
    suite.proxy.cutAfter(suite.svc.database.client, commandOn("update", "player_profiles"));
    const updated = await suite.svc.postJson(
      "/v1/players/update",
      { players: [{ partner_user_id: "bob", tags_add: ["vip"] }] },
      project.publicKey,
    );
    // The profile's write acknowledged, every command after it fails: none of the players' sets is written.
    expect(updated.status).toBe(200);
    await suite.proxy.restoreFor(suite.svc.baseUrl);
    expect(await counted("bob", project)).toEqual(project.expected);
  });
});
