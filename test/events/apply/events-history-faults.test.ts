import { describe, expect, it } from "vitest";
import { commandOn, suiteBehindProxy } from "../../support/db/db-proxy.js";
import { needsOwner } from "../../../src/db/engine.js";
import { bruteForce, byName, queueOf, waitFor } from "../../support/service/events.js";
import { storedChangedPlayers } from "../../support/db/changed-players.js";
import { ownerRoundsDone } from "../../support/service/metrics.js";

const suite = suiteBehindProxy({ DB_TIMEOUT_MS: "1000" });

describe("a history move cut off by a database failure", () => {
  it("the update answers 200 with the move recorded: charts count it at once, and the periodic check makes it", async () => {
    const { projectId, publicKey, privateKey } = await suite.svc.createProject();
    const at = new Date(suite.svc.clock.now().getTime() - 2 * 86_400_000);
    const day = at.toISOString().slice(0, 10);
    const post = (path: string, body: object, key = privateKey) => suite.svc.postJson(path, body, key);
    await post(
      "/v1/events",
      { events: [1, 2, 3].map(() => ({ name: "play", partner_user_id: "alice", timestamp: at.toISOString() })) },
      publicKey,
    );
    await waitFor(
      () => queueOf(suite.svc),
      (queue) => queue.queue_depth === 0,
    );

    // The database goes away once the profile and its membership are written: the queuing of the move fails (where
    // membership is written behind, after the call answered).
    const cut = suite.proxy.cutAt(suite.svc.database.client, commandOn("findAndModify", "event_queue"));
    const updated = await post(
      "/v1/players/update",
      { players: [{ partner_user_id: "alice", tags_add: ["vip"] }] },
      publicKey,
    );
    expect(updated.status).toBe(200);
    await cut;
    await suite.proxy.restoreFor(suite.svc.baseUrl);

    const alice = [1, 2, 3].map(() => ({ name: "play", player: "alice", day }));
    const trends = await post("/v1/events/trends", { from: day, to: day, tags: ["vip"] });
    expect(byName(trends.body)).toEqual(bruteForce(alice, [day]));

    // No resync was queued: the stored history (written once the worker is idle) stays out of the tag until the check
    // queues the recorded change again.
    const histories = suite.svc.database.db.collection("event_player_rollups");
    const stored = async () => (await histories.findOne({ _id: `${projectId}/u:alice` as never }))?.cohorts;
    expect(await waitFor(stored, (cohorts) => cohorts !== undefined)).toEqual([]);
    suite.svc.clock.advance(6 * 60_000);
    await waitFor(stored, (cohorts) => cohorts?.includes("t/vip") === true);
    // Settled: the owner knows it at once (its database keeps the change until the project's next one), elsewhere the
    // database does.
    await ownerRoundsDone(suite.svc);
    if (!needsOwner(suite.svc.database)) {
      await waitFor(
        () => storedChangedPlayers(suite.svc, projectId),
        ({ keys }) => keys.length === 0,
      );
    }
    expect(byName((await post("/v1/events/trends", { from: day, to: day, tags: ["vip"] })).body)).toEqual(
      bruteForce(alice, [day]),
    );
  });

  it("cut right after the profile: membership is completed once the database is back, and the move queued after it", async () => {
    const { projectId, publicKey, privateKey } = await suite.svc.createProject();
    const at = new Date(suite.svc.clock.now().getTime() - 2 * 86_400_000);
    const day = at.toISOString().slice(0, 10);
    await suite.svc.postJson(
      "/v1/events",
      { events: [1, 2].map(() => ({ name: "play", partner_user_id: "bob", timestamp: at.toISOString() })) },
      publicKey,
    );
    await waitFor(
      () => queueOf(suite.svc),
      (queue) => queue.queue_depth === 0,
    );

    suite.proxy.cutAfter(suite.svc.database.client, commandOn("update", "player_profiles"));
    const updated = await suite.svc.postJson(
      "/v1/players/update",
      { players: [{ partner_user_id: "bob", tags_add: ["vip"] }] },
      publicKey,
    );
    expect(updated.status).toBe(200);
    await suite.proxy.restoreFor(suite.svc.baseUrl);

    // No clock moved: the background completion writes the membership, then queues the move it held back.
    const histories = suite.svc.database.db.collection("event_player_rollups");
    const stored = async () => (await histories.findOne({ _id: `${projectId}/u:bob` as never }))?.cohorts;
    await waitFor(stored, (cohorts) => cohorts?.includes("t/vip") === true);
    const search = await suite.svc.postJson("/v1/players/search", { tags: ["vip"] }, privateKey);
    expect(search.body.players.map((p: { identity_key: string }) => p.identity_key)).toEqual(["u:bob"]);
    const bob = [1, 2].map(() => ({ name: "play", player: "bob", day }));
    const trends = await suite.svc.postJson("/v1/events/trends", { from: day, to: day, tags: ["vip"] }, privateKey);
    expect(byName(trends.body)).toEqual(bruteForce(bob, [day]));
  });
});
