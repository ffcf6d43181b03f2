import { MongoClient, type CommandStartedEvent } from "mongodb";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { needsOwner } from "../../src/db/engine.js";
import { startedDuring } from "../support/commands.js";
import { DbProxy } from "../support/db/db-proxy.js";
import { waitFor } from "../support/service/main-process.js";
import { createLaunchFixture, type LaunchFixture } from "../support/service/launch.js";
import { startTestService, TestClock, type TestService } from "../support/service/service.js";

// The service reaches its database through a proxy the tests cut at an exact step of a verify;
// `direct` reads the same database around the proxy, to see what landed while the service could not.
let proxy: DbProxy;
let test: TestService;
let direct: MongoClient;
beforeAll(async () => {
  proxy = await DbProxy.start(inject("mongodbUri"));
  test = await startTestService({ LAUNCH_SWEEP_SECONDS: "1", API_KEY_CACHE_SECONDS: "300" }, { mongodbUri: proxy.uri });
  direct = new MongoClient(inject("mongodbUri"));
});
// A failed test must not leave the next one without a database.
afterEach(() => recover());
const recover = () => proxy.restoreFor(test.baseUrl);
const until = (condition: () => Promise<boolean>) => waitFor(condition, 20_000, "the condition");
const cutAfter = (matches: (event: CommandStartedEvent) => boolean) => proxy.cutAfter(test.database.client, matches);
afterAll(async () => {
  await test.stop();
  proxy.cut();
  await direct.close();
});

const db = () => direct.db(test.config.dbName);

const on = (commandName: string, collection: string) => (event: CommandStartedEvent) =>
  event.commandName === commandName && event.command[commandName] === collection;

/** A spend: the delete of one unspent marker by `_id`, not the sweep's delete of expired ones. */
const spend = (event: CommandStartedEvent) =>
  on("delete", "launch_tokens_unspent")(event) && event.command.deletes[0].q._id !== undefined;

/** The installations the launch record of the fixture's user remembers, read around the proxy. */
async function rememberedInstallations(launch: LaunchFixture): Promise<string[]> {
  const doc = await db()
    .collection<{ _id: string; installations?: string[] }>("entitlements")
    .findOne({ _id: `${launch.platformUserId}:${launch.gameId}` });
  return doc?.installations ?? [];
}

/** A fixture whose installation carries a device profile, which a followed-up verify folds into the user's. */
async function launchWithDeviceProfile(service = test): Promise<LaunchFixture> {
  const launch = await createLaunchFixture(service);
  const update = await service.postJson(
    "/v1/players/update",
    { players: [{ device_id: launch.installationId, tags_add: ["tutorial_done"] }] },
    launch.publicKey,
  );
  expect(update.status).toBe(200);
  return launch;
}

async function deviceIdentity(launch: LaunchFixture, service = test): Promise<string | undefined> {
  const res = await service.postJson("/v1/players/get", { device_id: launch.installationId }, launch.privateKey);
  return res.body.profile?.identity_key;
}

describe("the spend is the verify's commit point", () => {
  it("a database failure right after the spend still answers valid; the follow-up lands after recovery", async () => {
    const launch = await launchWithDeviceProfile();
    const { token } = await launch.issue();
    cutAfter(spend);
    const verified = await launch.verify(token);
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ valid: true, installation_id: launch.installationId });

    // Nothing of the follow-up landed, but it is recorded.
    expect(await rememberedInstallations(launch)).toEqual([]);
    expect(await db().collection("launch_follow_ups").countDocuments()).toBe(1);

    await recover();
    await until(async () => (await db().collection("launch_follow_ups").countDocuments()) === 0);
    expect(await rememberedInstallations(launch)).toEqual([launch.installationId]);
    expect(await deviceIdentity(launch)).toBe(`u:${verified.body.partner_user_id}`);
    expect((await launch.verify(token)).body).toMatchObject({ valid: false, error: "already_used" });
  });

  it("a failure before the spend answers 503 and leaves the token unspent: the retry is valid", async () => {
    const launch = await launchWithDeviceProfile();
    const { token } = await launch.issue();
    // A first launch: the failure hits between recording the follow-up and the spend.
    cutAfter(on("insert", "launch_follow_ups"));
    const failed = await launch.verify(token);
    expect(failed.status).toBe(503);
    expect(failed.body.code).toBe("unavailable");

    await recover();
    const retried = await launch.verify(token);
    expect(retried.body).toMatchObject({ valid: true, installation_id: launch.installationId });
    expect(await deviceIdentity(launch)).toBe(`u:${retried.body.partner_user_id}`);

    // A repeat launch: the failure hits after the reads.
    const { token: again } = await launch.issue();
    cutAfter(on("find", "entitlements"));
    expect((await launch.verify(again)).status).toBe(503);
    await recover();
    expect((await launch.verify(again)).body.valid).toBe(true);
  });
});

describe("a spend whose reply is lost", () => {
  // The sole writer (an embedded database's owner) knows the spend was its own; on a shared database nothing is
  // claimed (docs/database.md, "A spend whose reply is lost").
  it("answers 503; the retry is valid where the instance is the sole writer, already_used where it is not", async () => {
    const launch = await launchWithDeviceProfile();
    await launch.verify((await launch.issue()).token);
    const { token } = await launch.issue();
    const client = test.database.client;
    const dropReply = (event: CommandStartedEvent) => {
      if (!spend(event)) return;
      proxy.dropReplies();
      client.off("commandStarted", dropReply);
    };
    client.on("commandStarted", dropReply);
    expect((await launch.verify(token)).status).toBe(503);
    // The delete was applied (on a loaded machine, after the service gave up waiting): the marker goes.
    await until(async () => (await db().collection("launch_tokens_unspent").countDocuments()) === 0);

    await recover();
    if (needsOwner(test.database)) expect((await launch.verify(token)).body.valid).toBe(true);
    expect((await launch.verify(token)).body).toMatchObject({ valid: false, error: "already_used" });
  });
});

describe("single use of a first launch, which records a follow-up", () => {
  it("of 50 concurrent verifies of one token exactly one is valid and none fails; the follow-up completes", async () => {
    const launch = await launchWithDeviceProfile();
    const { token } = await launch.issue();
    const answers = await Promise.all(Array.from({ length: 50 }, () => launch.verify(token)));
    expect(answers.map((a) => a.status).filter((status) => status !== 200)).toEqual([]);
    expect(answers.filter((a) => a.body.valid)).toHaveLength(1);
    expect(answers.filter((a) => a.body.error === "already_used")).toHaveLength(49);
    await until(async () => (await db().collection("launch_follow_ups").countDocuments()) === 0);
    expect(await rememberedInstallations(launch)).toEqual([launch.installationId]);
  });
});

describe("database calls of a verify", () => {
  // A service of its own, whose sweep (every minute) cannot run while the commands are counted.
  let quiet: TestService;
  beforeAll(async () => {
    // No event apply worker either: its polling would count among a verify's commands. Its clock stands still, so its
    // look at a project's config version (once a second where other instances may change it) does not land there.
    const clock = new TestClock();
    clock.freeze();
    quiet = await startTestService({ API_KEY_CACHE_SECONDS: "300", EVENT_WORKER: "off" }, { clock });
  });
  afterAll(() => quiet.stop());

  /** The commands the service sends to its database while `run` runs. */
  const commandsDuring = async (run: () => Promise<unknown>) =>
    (await startedDuring(quiet.database.client, run))
      .filter((event) => event.databaseName === quiet.config.dbName)
      .map((event) => `${event.commandName} ${event.command[event.commandName]}`);

  const verifyOnce = async (launch: LaunchFixture) => {
    const { token } = await launch.issue();
    return commandsDuring(async () => expect((await launch.verify(token)).body.valid).toBe(true));
  };

  it("a repeat launch makes two: the entitlement with the launch record, then the spend", async () => {
    const launch = await launchWithDeviceProfile(quiet);
    const first = await verifyOnce(launch);
    expect(first.length).toBeGreaterThan(2);

    expect(await verifyOnce(launch)).toEqual(["find entitlements", "delete launch_tokens_unspent"]);
  });

  it("a changed partner link is followed up once, then launches cost two again", async () => {
    const launch = await launchWithDeviceProfile(quiet);
    await verifyOnce(launch);
    const link = await quiet.postJson(
      "/v1/players/link",
      { platform_user_id: launch.platformUserId, partner_user_id: "hero-9" },
      launch.privateKey,
    );
    expect(link.status).toBe(200);
    expect((await verifyOnce(launch)).length).toBeGreaterThan(2);
    // The installation now routes to the newly linked player.
    const update = await quiet.postJson(
      "/v1/players/update",
      { players: [{ device_id: launch.installationId, tags_add: ["relinked"] }] },
      launch.privateKey,
    );
    expect(update.body.updated[0].identity_key).toBe("u:hero-9");
    expect(await verifyOnce(launch)).toHaveLength(2);
  });
});
