import type { CommandStartedEvent } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EntitlementStore } from "../../src/admin/entitlement-store.js";
import { createLaunchFixture, entitle, type LaunchFixture } from "../support/service/launch.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

// No event apply worker: its polling would count among a verify's commands.
const QUIET = { API_KEY_CACHE_SECONDS: "300", EVENT_WORKER: "off" };

/** Issues a token for the fixture's user and installation on `service`. */
async function issueOn(service: TestService, launch: LaunchFixture): Promise<string> {
  const issued = await service.postJson(
    "/v1/launch_tokens/issue",
    {
      platform_user_id: launch.platformUserId,
      installation_id: launch.installationId,
      game_id: launch.gameId,
      channel_id: "beta",
      build_version: "1.2.3",
    },
    launch.platformKey,
  );
  expect(issued.status).toBe(200);
  return issued.body.token;
}

/** Verifies `token` on `service`, counting the database commands the verify sends. */
function verifyOn(service: TestService, launch: LaunchFixture, token: string) {
  return commandsDuring(service, () => service.postJson("/v1/launch_tokens/verify", { token }, launch.privateKey));
}

async function launchOn(service: TestService, launch: LaunchFixture) {
  return verifyOn(service, launch, await issueOn(service, launch));
}

/**
 * What `run` answers, and the collections of the commands the service sent to its database meanwhile; but the read of
 * the project's config version, at most once a second where other instances write (write-commands budgets it).
 */
async function commandsDuring<T>(service: TestService, run: () => Promise<T>): Promise<{ answer: T; on: string[] }> {
  const on: string[] = [];
  const record = (event: CommandStartedEvent) => {
    const command = `${event.commandName} ${event.command[event.commandName]}`;
    if (event.databaseName === service.config.dbName && command !== "find config_heads") on.push(command);
  };
  service.database.client.on("commandStarted", record);
  try {
    return { answer: await run(), on };
  } finally {
    service.database.client.off("commandStarted", record);
  }
}

describe("the entitlement and the launch record in one document", () => {
  let test: TestService;
  beforeAll(async () => {
    test = await startTestService(QUIET);
  });
  afterAll(() => test.stop());

  const setOwnership = (platformUserId: string, gameId: number, owns: boolean) =>
    test.postJson(
      "/v1/admin/entitlements",
      { platform_user_id: platformUserId, game_id: gameId, owns, source: "STORE", channel_id: "s", build_version: "1" },
      ADMIN_KEY,
    );

  it("an installation the launch record remembers needs no follow-up again: two database calls", async () => {
    const launch = await createLaunchFixture(test);
    expect((await launchOn(test, launch)).answer.body).toMatchObject({ valid: true });
    const repeat = await launchOn(test, launch);
    expect(repeat.answer.body).toMatchObject({ valid: true, entitlement: { owns: true } });
    expect(repeat.on).toEqual(["find entitlements", "delete launch_tokens_unspent"]);
  });

  it("an entitlement written before its game has a project counts once the project exists", async () => {
    const gameId = 7_000_000 + Math.floor(Math.random() * 1_000_000);
    const launch = await createLaunchFixture(test);
    expect((await setOwnership(launch.platformUserId, gameId, true)).status).toBe(200);
    const project = await test.postJson("/v1/admin/projects", { name: "Late", game_id: gameId }, ADMIN_KEY);
    expect(project.status).toBe(200);
    const late = {
      ...launch,
      gameId,
      projectId: project.body.project.project_id,
      privateKey: project.body.private_key,
    };

    const { answer } = await launchOn(test, late);
    expect(answer.body).toMatchObject({ valid: true, entitlement: { owns: true, game_id: gameId } });
  });

  it("a partner link made before any entitlement is kept when the entitlement comes, and the other way round", async () => {
    const launch = await createLaunchFixture(test);
    const user = crypto.randomUUID();
    const mine = { ...launch, platformUserId: user };
    const link = (partnerUserId: string) =>
      test.postJson("/v1/players/link", { platform_user_id: user, partner_user_id: partnerUserId }, launch.privateKey);
    expect((await link("early-1")).status).toBe(200);
    // The launch record alone is no entitlement: the platform does not issue for it.
    const refused = await test.postJson(
      "/v1/launch_tokens/issue",
      { platform_user_id: user, installation_id: launch.installationId, game_id: launch.gameId },
      launch.platformKey,
    );
    expect(refused.status).toBe(403);

    expect((await setOwnership(user, launch.gameId, true)).status).toBe(200);
    const first = await launchOn(test, mine);
    expect(first.answer.body).toMatchObject({ valid: true, partner_user_id: "early-1", entitlement: { owns: true } });

    // A refund keeps the link and the followed-up installation; a new link keeps the ownership.
    const token = await issueOn(test, mine);
    expect((await setOwnership(user, launch.gameId, false)).status).toBe(200);
    const refunded = await verifyOn(test, mine, token);
    expect(refunded.answer.body).toMatchObject({ partner_user_id: "early-1", entitlement: { owns: false } });
    expect(refunded.on).toHaveLength(2);
    expect((await setOwnership(user, launch.gameId, true)).status).toBe(200);
    expect((await link("later-2")).status).toBe(200);
    const relinked = await launchOn(test, mine);
    expect(relinked.answer.body).toMatchObject({ partner_user_id: "later-2", entitlement: { owns: true } });
  });

  it("the store serialises the entitlement's writes and the launch record's to one document (FerretDB loses one otherwise)", async () => {
    const store = new EntitlementStore(test.database.db);
    const gameId = 8_000_000 + Math.floor(Math.random() * 1_000_000);
    const users = Array.from({ length: 40 }, () => crypto.randomUUID());
    // Updates of existing documents: FerretDB applies each as a read and a replace, without isolation.
    await Promise.all(users.map((user) => entitle(store, user, gameId, false)));
    await Promise.all(
      users.flatMap((user) => [
        entitle(store, user, gameId, true),
        store.setPartnerLink(user, gameId, `p-${user}`, test.clock.now()),
      ]),
    );
    const records = await Promise.all(users.map((user) => store.findUserGame(user, gameId)));
    expect(records.map(({ entitlement, launch }) => [entitlement?.owns, launch.partnerUserId])).toEqual(
      users.map((user) => [true, `p-${user}`]),
    );
  });
});
