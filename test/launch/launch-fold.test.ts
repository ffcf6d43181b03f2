import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLaunchFixture, type LaunchFixture } from "../support/service/launch.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

let test: TestService;
beforeAll(async () => {
  test = await startTestService();
});
afterAll(() => test.stop());

describe("a verified launch links the installation to the player", () => {
  it("folds the device profile into the real one, routes later device updates to it, and counts its tags once", async () => {
    const launch = await createLaunchFixture(test);
    const update = (entry: object) => test.postJson("/v1/players/update", { players: [entry] }, launch.privateKey);
    const get = (body: object) => test.postJson("/v1/players/get", body, launch.privateKey);

    // Before signing in, the game tags its device.
    expect(
      (await update({ device_id: launch.installationId, tags_add: ["Tutorial Done"], traits: { difficulty: "hard" } }))
        .status,
    ).toBe(200);
    await test.postJson(
      "/v1/players/link",
      { platform_user_id: launch.platformUserId, partner_user_id: "hero-7" },
      launch.privateKey,
    );
    expect((await update({ partner_user_id: "hero-7", tags_add: ["vip"] })).status).toBe(200);

    const { token } = await launch.issue();
    const verified = await launch.verify(token);
    expect(verified.body).toMatchObject({
      valid: true,
      partner_user_id: "hero-7",
      installation_id: launch.installationId,
    });

    const real = await get({ partner_user_id: "hero-7" });
    expect(real.body.found).toBe(true);
    expect(real.body.profile).toMatchObject({
      identity_key: "u:hero-7",
      linked: true,
      platform_user_id: launch.platformUserId,
    });
    expect(real.body.profile.tags.sort()).toEqual(["tutorial_done", "vip"]);
    expect(real.body.profile.traits).toEqual({ difficulty: "hard" });

    const later = await update({ device_id: launch.installationId, tags_add: ["boss_beaten"] });
    expect(later.body.updated[0].identity_key).toBe("u:hero-7");
    expect((await get({ device_id: launch.installationId })).body.profile.identity_key).toBe("u:hero-7");

    const tags = await test.postJson("/v1/players/tags", { page: 1 }, launch.privateKey);
    const count = (tag: string) => tags.body.tags.find((t: { tag: string }) => t.tag === tag)?.players_count;
    expect(count("tutorial_done")).toBe(1);
    expect(count("boss_beaten")).toBe(1);
  });

  it("a shared installation routes device updates to whoever launched on it last", async () => {
    const launch = await createLaunchFixture(test);
    const other = randomUUID();
    const owns = await test.postJson(
      "/v1/admin/entitlements",
      { platform_user_id: other, game_id: launch.gameId, owns: true },
      ADMIN_KEY,
    );
    expect(owns.status).toBe(200);
    for (const [user, partner] of [
      [launch.platformUserId, "ann"],
      [other, "bob"],
    ]) {
      await test.postJson("/v1/players/link", { platform_user_id: user, partner_user_id: partner }, launch.privateKey);
    }

    for (const [user, partner] of [
      [launch.platformUserId, "ann"],
      [other, "bob"],
      [launch.platformUserId, "ann"],
    ]) {
      const { token } = await launch.issue({ platform_user_id: user });
      expect((await launch.verify(token)).body).toMatchObject({ valid: true, partner_user_id: partner });
      expect(await deviceUpdateLandsOn(launch)).toBe(`u:${partner}`);
    }
  });

  it("a new partner link takes the device along at the next verify", async () => {
    const launch = await createLaunchFixture(test);
    const verifyOnce = async () => (await launch.verify((await launch.issue()).token)).body;
    const first = await verifyOnce();
    expect(await deviceUpdateLandsOn(launch)).toBe(`u:${first.partner_user_id}`);

    await test.postJson(
      "/v1/players/link",
      { platform_user_id: launch.platformUserId, partner_user_id: "renamed" },
      launch.privateKey,
    );
    expect(await verifyOnce()).toMatchObject({ valid: true, partner_user_id: "renamed" });
    expect(await deviceUpdateLandsOn(launch)).toBe("u:renamed");
    const profile = await test.postJson("/v1/players/get", { partner_user_id: "renamed" }, launch.privateKey);
    expect(profile.body.profile).toMatchObject({ linked: true, platform_user_id: launch.platformUserId });
  });
});

describe("a launch from an installation already linked to the player", () => {
  it("writes nothing", async () => {
    const launch = await createLaunchFixture(test);
    await launch.verify((await launch.issue()).token);
    const links = async () => ({
      device: await test.database.db.collection("player_devices").findOne({ device_id: launch.installationId }),
      accounts: await test.database.db.collection("player_accounts").find({ project_id: launch.projectId }).toArray(),
    });
    const before = await links();
    expect(before.device).not.toBeNull();

    test.clock.advance(60_000);
    expect((await launch.verify((await launch.issue()).token)).body.valid).toBe(true);
    expect(await links()).toEqual(before);
  });
});

/** The profile an update by the fixture's installation id alone writes to. */
async function deviceUpdateLandsOn(launch: LaunchFixture): Promise<string> {
  const res = await test.postJson(
    "/v1/players/update",
    { players: [{ device_id: launch.installationId, tags_add: ["seen"] }] },
    launch.privateKey,
  );
  expect(res.status).toBe(200);
  return res.body.updated[0].identity_key;
}
