import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock.js";
import { engineOf, needsOwner } from "../../src/db/engine.js";
import { Players } from "../../src/players/players.js";
import { createPlayerStores } from "../../src/players/storage/stores.js";
import type { HistoryFollower } from "../../src/players/rounds/written-profiles.js";
import { storedChangedPlayers } from "../support/db/changed-players.js";
import { waitFor } from "../support/service/events.js";
import { ownerRoundsDone } from "../support/service/metrics.js";
import { startTestService, type TestService } from "../support/service/service.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

/** Once the project's rounds are done: the owner's once its memory says so, elsewhere once the database lists none. */
async function roundsDone(service: TestService, projectId: string) {
  await ownerRoundsDone(service);
  if (!needsOwner(service.database)) {
    await waitFor(
      () => storedChangedPlayers(service, projectId),
      ({ keys }) => keys.length === 0,
    );
  }
}

describe("the record of changed players", () => {
  it("names the tags a round moves, and its players leave the database once their resync is applied (the owner's with its next record)", async () => {
    const { projectId, publicKey } = await svc.createProject();
    const update = (partner_user_id: string) =>
      svc.postOk("/v1/players/update", { players: [{ partner_user_id, tags_add: ["gold"] }] }, publicKey);
    const owner = needsOwner(svc.database);

    await update("ann");
    const recorded = await storedChangedPlayers(svc, projectId);
    expect(recorded.tags).toEqual(["gold"]);
    await roundsDone(svc, projectId);
    // Settled; the owner's database keeps it until the project's next record (or a clean stop).
    expect((await storedChangedPlayers(svc, projectId)).keys).toEqual(owner ? ["u:ann"] : []);

    await update("bob");
    await roundsDone(svc, projectId);
    expect((await storedChangedPlayers(svc, projectId)).keys).toEqual(owner ? ["u:bob"] : []);
  });

  it("is removed at a clean stop once settled, tags and all", async () => {
    const own = await startTestService();
    try {
      const { projectId, publicKey } = await own.createProject();
      await own.postOk("/v1/players/update", { players: [{ partner_user_id: "cat", tags_add: ["blue"] }] }, publicKey);
      await roundsDone(own, projectId);
      await own.service.close(1_000);
      const left = await storedChangedPlayers(own, projectId);
      expect(left.keys).toEqual([]);
      if (needsOwner(own.database)) expect(left.tags).toEqual([]);
    } finally {
      await own.database.db.dropDatabase();
      await own.database.close();
    }
  });

  it("written in an owner's page, is settled by an instance without the owner's memory on the same database", async (ctx) => {
    if (!needsOwner(svc.database)) return ctx.skip("only an owner writes pages (MongoDB has no owner)");
    // The owner records and stops with the resync still queued (its worker off): the entry stays in its page.
    const own = await startTestService({ EVENT_WORKER: "off" });
    const { projectId, publicKey } = await own.createProject();
    await own.postOk("/v1/players/update", { players: [{ partner_user_id: "eve", tags_add: ["teal"] }] }, publicKey);
    await own.service.close(1_000);
    await own.database.close();
    const bare = await startTestService({ DB_NAME: own.config.dbName, OWNER_MEMORY_MB: "0" });
    try {
      expect((await storedChangedPlayers(bare, projectId)).keys).toEqual(["u:eve"]);
      // Its worker applies the resync, and the settle finds the entry in the page (well before any repair's grace).
      await waitFor(
        () => storedChangedPlayers(bare, projectId),
        ({ keys }) => keys.length === 0,
      );
    } finally {
      await bare.stop();
    }
  });

  it("is settled by a resync queued only once the round's membership is in the database", async () => {
    const { projectId } = await svc.createProject();
    // Players of their own, kept in an owner's memory where the engine has one, telling when the resync is queued.
    const stores = createPlayerStores(svc.database.db, engineOf(svc.database, 64 * 2 ** 20));
    const inDatabase = createPlayerStores(svc.database.db, engineOf(svc.database, 0)).membership;
    const countsWhenQueued: number[][] = [];
    const histories: HistoryFollower = {
      queue: async () => void countsWhenQueued.push([...(await inDatabase.readStats(projectId)).counts.values()]),
      erase: async () => 0,
    };
    const players = new Players({ stores, clock: systemClock, histories });
    const entry = { partnerUserId: "dan", tagsAdd: ["green"], tagsRemove: [], traitsIncrement: {}, traitsUnset: [] };
    await players.update(projectId, [entry]);
    await players.stop(5_000);
    expect(countsWhenQueued).toEqual([[1]]);
  });
});
