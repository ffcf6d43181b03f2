import type { CommandStartedEvent } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { commandsOf } from "../support/commands.js";
import { DbProxy } from "../support/db/db-proxy.js";
import { waitFor } from "../support/service/events.js";
import { ownerRoundsDone } from "../support/service/metrics.js";
import { startTestService, type TestService } from "../support/service/service.js";

// A restart of the owner of an embedded database whose fill of its memory fails: every read of the profiles fails
// (its connection dropped by a proxy) while the database answers everything else, a ping included.
const PLAYERS = 40;

let proxy: DbProxy;
let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;
beforeAll(async () => {
  proxy = await DbProxy.start(inject("mongodbUri"));
  const before = await startTestService({}, { mongodbUri: proxy.uri });
  project = await before.createProject();
  const players = Array.from({ length: PLAYERS }, (_, i) => ({
    partner_user_id: `p-${i}`,
    tags_add: [i % 2 === 0 ? "red" : "blue"],
  }));
  await before.postOk("/v1/players/update", { players }, project.privateKey);
  await ownerRoundsDone(before);
  await before.service.close();
  await before.database.close();
  // From the fill's first read of the profiles on, every command on them fails (until the proxy is restored).
  let failing = false;
  const failProfileReads = (event: CommandStartedEvent) => {
    if (!failing && event.commandName === "find" && event.command.find === "player_profiles") {
      failing = true;
      proxy.failCommandsHolding("player_profiles");
    }
  };
  svc = await startTestService(
    { DB_NAME: before.config.dbName },
    {
      mongodbUri: proxy.uri,
      waitReady: false,
      beforeStart: (database) => database.client.on("commandStarted", failProfileReads),
    },
  );
}, 120_000);
afterAll(async () => {
  await proxy?.restore();
  await svc?.stop();
  proxy?.cut();
});

async function readyz(): Promise<{ status: number; body: { code?: string; message?: string; status?: string } }> {
  const res = await fetch(`${svc.baseUrl}/readyz`);
  return { status: res.status, body: await res.json() };
}

describe("a start whose fill of the owner's memory fails", () => {
  it("is not ready and refuses calls while the fill is tried again; once it succeeds, ready, filled and exact", async () => {
    // Tried again, not given up: /readyz keeps saying why while the database answers its ping.
    const notReady = await waitFor(readyz, ({ body }) => /trying again/.test(body.message ?? ""));
    expect(notReady).toEqual({
      status: 503,
      body: {
        code: "unavailable",
        message: "could not fill the owner's memory (the database did not answer), trying again: 0 of 1 projects",
      },
    });
    expect((await fetch(`${svc.baseUrl}/healthz`)).status).toBe(200);

    // Calls meanwhile answer 503 and do nothing.
    const key = project.privateKey;
    const update = await svc.postJson(
      "/v1/players/update",
      { players: [{ partner_user_id: "p-0", tags_add: ["gold"] }] },
      key,
    );
    expect(update.status).toBe(503);
    expect(update.body).toEqual({ code: "unavailable", message: `not ready: ${notReady.body.message}` });
    expect((await svc.postJson("/v1/players/search", { tags: ["red"] }, key)).status).toBe(503);
    expect((await readyz()).status).toBe(503);

    // The database whole again: the next attempt fills the memory, and the instance is ready.
    await proxy.restore();
    await svc.service.ready;
    expect((await readyz()).status).toBe(200);
    const reads = await commandsOf(svc.database.client, async () => {
      const red = await svc.postOk("/v1/players/search", { tags: ["red"], page_size: 1 }, key);
      expect(red.players_info.total).toBe(PLAYERS / 2);
    });
    expect(reads).not.toContainEqual(expect.stringMatching(/profiles|members/));
    const p0 = await svc.postOk("/v1/players/get", { partner_user_id: "p-0" }, key);
    expect(p0.profile.tags).toEqual(["red"]);
  });
});
