import type { CommandStartedEvent } from "mongodb";
import { describe, expect, it } from "vitest";
import { commandOn, suiteBehindProxy } from "../support/db/db-proxy.js";

const suite = suiteBehindProxy({ DB_TIMEOUT_MS: "1000" });

describe("the owner's memory of profiles", () => {
  it("is not trusted after a profile write whose outcome is unknown: the next search reads what the database holds", async () => {
    const { publicKey, privateKey } = await suite.svc.createProject();
    const update = (players: object[]) => suite.svc.postJson("/v1/players/update", { players }, publicKey);
    const matching = async (filter: object) =>
      (await suite.svc.postJson("/v1/players/search", filter, privateKey)).body.players.map(
        (p: { identity_key: string }) => p.identity_key,
      );
    const golds = () => matching({ traits: { tier: "gold" } });
    expect((await update([{ partner_user_id: "a", traits: { tier: "gold" } }, { partner_user_id: "b" }])).status).toBe(
      200,
    );
    // The first search fills the memory (on the embedded engine); a later one answers from it.
    expect(await golds()).toEqual(["u:a"]);

    // b's profile write reaches the database, its reply never comes back: the call fails, the write is there.
    const updatesProfiles = commandOn("update", "player_profiles");
    const dropReply = (event: CommandStartedEvent) => {
      if (updatesProfiles(event)) suite.proxy.dropReplies();
    };
    suite.svc.database.client.on("commandStarted", dropReply);
    try {
      expect((await update([{ partner_user_id: "b", traits: { tier: "gold" } }])).status).toBe(503);
    } finally {
      suite.svc.database.client.off("commandStarted", dropReply);
    }
    await suite.proxy.restoreFor(suite.svc.baseUrl);
    expect(await golds()).toEqual(["u:a", "u:b"]);
  });
});
