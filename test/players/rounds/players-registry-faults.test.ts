import { MongoClient, type CommandStartedEvent } from "mongodb";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { commandOn, DbProxy } from "../../support/db/db-proxy.js";
import { startTestService, type TestService } from "../../support/service/service.js";

// The service reaches its database through a proxy cut at an exact step of a registration;
// `direct` reads the same database around the proxy.
let proxy: DbProxy;
let svc: TestService;
let direct: MongoClient;
beforeAll(async () => {
  proxy = await DbProxy.start(inject("mongodbUri"));
  svc = await startTestService({}, { mongodbUri: proxy.uri });
  direct = new MongoClient(inject("mongodbUri"));
});
afterEach(() => recover());
const recover = () => proxy.restoreFor(svc.baseUrl);
const cutAfter = (matches: (event: CommandStartedEvent) => boolean) => proxy.cutAfter(svc.database.client, matches);
afterAll(async () => {
  await svc.stop();
  proxy.cut();
  await direct.close();
});

const db = () => direct.db(svc.config.dbName);

/** Runs `fault` in the driver's commandStarted event of the first command matching `matches`. */
function onCommand(matches: (event: CommandStartedEvent) => boolean, fault: () => void): void {
  const client = svc.database.client;
  const onStarted = (event: CommandStartedEvent) => {
    if (!matches(event)) return;
    client.off("commandStarted", onStarted);
    fault();
  };
  client.on("commandStarted", onStarted);
}

const counter = async (projectId: string) =>
  db().collection<{ _id: string; tag_count: number }>("player_registry_counters").findOne({ _id: projectId });
const tagRecords = (projectId: string) => db().collection("player_tags").countDocuments({ project_id: projectId });

/** 500 new tags, 50 a player: the whole of a project's allowance. */
const fiveHundredTags = () =>
  Array.from({ length: 10 }, (_, p) => ({
    partner_user_id: `full-${p}`,
    tags_add: Array.from({ length: 50 }, (_, t) => `tag_${p * 50 + t}`),
  }));

describe("a registration that fails after taking its slots", () => {
  it("gives the slots back when the database answers again", async () => {
    const { projectId, publicKey } = await svc.createProject();
    // The tag insert fails (its connection is dropped as it starts); the proxy still takes connections, so the
    // database answers the give-back (a cut and restore raced the driver's reconnect on a loaded machine).
    onCommand(commandOn("insert", "player_tags"), () => proxy.dropConnections());
    const failed = await svc.postJson(
      "/v1/players/update",
      { players: [{ partner_user_id: "a", tags_add: ["x", "y"] }] },
      publicKey,
    );
    expect(failed.status).toBe(503);
    await recover();
    expect(await tagRecords(projectId)).toBe(0);
    expect((await counter(projectId))?.tag_count).toBe(0);
    const full = await svc.postJson("/v1/players/update", { players: fiveHundredTags() }, publicKey);
    expect(full.status).toBe(200);
    expect(full.body.rejected).toEqual([]);
  });

  it("leaves the counter high when it cannot, and the next start sets it to the records", async () => {
    const { projectId, publicKey } = await svc.createProject();
    // The counter's $inc lands, then the database is gone for the rest of the call.
    cutAfter(commandOn("findAndModify", "player_registry_counters"));
    const failed = await svc.postJson(
      "/v1/players/update",
      { players: [{ partner_user_id: "a", tags_add: ["x", "y", "z"] }] },
      publicKey,
    );
    expect(failed.status).toBe(503);
    await recover();
    expect(await tagRecords(projectId)).toBe(0);
    expect((await counter(projectId))?.tag_count).toBe(3);

    // A second start on the same database, its worker off: the first one's holds the queue's lease.
    const restarted = await startTestService({ DB_NAME: svc.config.dbName, EVENT_WORKER: "off" });
    try {
      expect((await counter(projectId))?.tag_count).toBe(0);
      const full = await restarted.postJson("/v1/players/update", { players: fiveHundredTags() }, publicKey);
      expect(full.status).toBe(200);
      expect(full.body.rejected).toEqual([]);
    } finally {
      await restarted.service.close(1_000);
      await restarted.database.close();
    }
  });
});
