import type { CommandStartedEvent } from "mongodb";
import { describe, expect, it, onTestFinished } from "vitest";
import { commandOn, serviceBehindProxy } from "../../support/db/db-proxy.js";
import { waitFor } from "../../support/service/events.js";

describe("players/update retried with its request_id after a 503", () => {
  it("answers the players as they are and applies no increment twice", async () => {
    const { proxy, svc, stop } = await serviceBehindProxy({ DB_TIMEOUT_MS: "1000" });
    onTestFinished(stop);
    const { privateKey } = await svc.createProject();
    const players = [
      { partner_user_id: "eve", traits_increment: { coins: 1 }, tags_add: ["vip"] },
      { partner_user_id: "fay", traits_increment: { coins: 2 } },
    ];
    const update = () => svc.postJson("/v1/players/update", { players, request_id: "retry-after-503" }, privateKey);
    const coins = async (player: string) =>
      (await svc.postJson("/v1/players/get", { partner_user_id: player }, privateKey)).body.profile?.traits.coins;

    // The profile write reaches the database, its reply never comes back: the call fails, the write is there.
    const updatesProfiles = commandOn("update", "player_profiles");
    const dropReply = (event: CommandStartedEvent) => {
      if (updatesProfiles(event)) proxy.dropReplies();
    };
    svc.database.client.on("commandStarted", dropReply);
    // Nor does the call's release of its id reach the database: the claim stays, as it did after a stall.
    const released = proxy.cutAt(
      svc.database.client,
      (event) => event.command.delete === "player_update_requests" && event.command.deletes[0].q.state === "running",
    );
    try {
      expect((await update()).status).toBe(503);
    } finally {
      svc.database.client.off("commandStarted", dropReply);
    }
    await released;
    await proxy.restoreFor(svc.baseUrl);
    expect(await coins("eve")).toBe(1);
    // Its claim on the id could not be given back (the database was gone): another instance would wait for it to
    // free at the call's deadline, 30 s from its start; the retry through this one runs at once all the same.
    const claim = await svc.database.db.collection("player_update_requests").findOne({ state: "running" });
    expect(claim!.expires_at.getTime()).toBeLessThanOrEqual(svc.clock.now().getTime() + 30_000);
    const retry = await update();
    expect(retry.status).toBe(200);
    expect(retry.body.updated.map((p: any) => [p.identity_key, p.tags])).toEqual([
      ["u:eve", ["vip"]],
      ["u:fay", []],
    ]);
    expect([await coins("eve"), await coins("fay")]).toEqual([1, 2]);
    // The failed call's membership is completed in the background; the retry moved none of it again.
    await waitFor(
      async () => (await svc.postJson("/v1/players/search", { tags: ["vip"] }, privateKey)).body.players_info.total,
      (total) => total === 1,
    );
  });
});
