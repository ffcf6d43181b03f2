import type { CommandStartedEvent } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serviceBehindProxy, type DbProxy } from "../support/db-proxy.js";
import type { TestService } from "../support/service.js";

let proxy: DbProxy;
let svc: TestService;
let stop: () => Promise<void>;
beforeAll(async () => {
  ({ proxy, svc, stop } = await serviceBehindProxy({ DB_TIMEOUT_MS: "1000" }));
});
afterAll(() => stop());

describe("the owner's memory of profiles", () => {
  it("is not trusted after a profile write whose outcome is unknown: the next search reads what the database holds", async () => {
    const { publicKey, privateKey } = await svc.createProject();
    const update = (players: object[]) => svc.postJson("/v1/players/update", { players }, publicKey);
    const matching = async (filter: object) =>
      (await svc.postJson("/v1/players/search", filter, privateKey)).body.players.map(
        (p: { identity_key: string }) => p.identity_key,
      );
    const golds = () => matching({ traits: { tier: "gold" } });
    expect((await update([{ partner_user_id: "a", traits: { tier: "gold" } }, { partner_user_id: "b" }])).status).toBe(
      200,
    );
    // The first search fills the memory (on the embedded engine); a later one answers from it.
    expect(await golds()).toEqual(["u:a"]);

    // b's profile write reaches the database, its reply never comes back: the call fails, the write is there.
    const dropReply = (event: CommandStartedEvent) => {
      if (event.commandName === "update" && event.command.update === "player_profiles") proxy.dropReplies();
    };
    svc.database.client.on("commandStarted", dropReply);
    try {
      expect((await update([{ partner_user_id: "b", traits: { tier: "gold" } }])).status).toBe(503);
    } finally {
      svc.database.client.off("commandStarted", dropReply);
    }
    await proxy.restoreFor(svc.baseUrl);
    expect(await golds()).toEqual(["u:a", "u:b"]);
  });
});
