import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLaunchFixture } from "../../support/service/launch.js";
import { startTestService, type TestService } from "../../support/service/service.js";

let test: TestService;
beforeAll(async () => {
  test = await startTestService();
});
afterAll(() => test.stop());

// Contract issue, item 8: a player first seen through a pseudonymous verify and later linked by partner_user_id
// must end as one profile, folded like a device, with tags and counts right.
describe("a pseudonymous player later linked to the studio's partner id", () => {
  it("ends as one profile: the pseudonymous one folds into the linked one at the next verify", async () => {
    const launch = await createLaunchFixture(test);
    const post = (path: string, body: unknown, key = launch.privateKey) => test.postJson(path, body, key);
    const update = (entry: object) => post("/v1/players/update", { players: [entry] }, launch.privateKey);
    const verifyOnce = async () => (await launch.verify((await launch.issue()).token)).body;

    const first = await verifyOnce();
    const pseudonym = first.partner_user_id;
    expect(
      (await update({ partner_user_id: pseudonym, tags_add: ["tutorial", "shared"], traits: { level: 3 } })).status,
    ).toBe(200);
    await post("/v1/players/link", { platform_user_id: launch.platformUserId, partner_user_id: "hero" });
    expect(
      (await update({ partner_user_id: "hero", tags_add: ["shared", "paid"], traits: { level: 7, gold: 1 } })).status,
    ).toBe(200);

    expect(await verifyOnce()).toMatchObject({ valid: true, partner_user_id: "hero" });

    const search = await post("/v1/players/search", {});
    const withPlatformUser = search.body.players.filter((p: any) => p.platform_user_id === launch.platformUserId);
    expect(withPlatformUser.map((p: any) => p.identity_key)).toEqual(["u:hero"]);
    const { profile } = (await post("/v1/players/get", { partner_user_id: "hero" })).body;
    expect(profile.tags.sort()).toEqual(["paid", "shared", "tutorial"]);
    expect(profile.traits).toEqual({ level: 7, gold: 1 });
    expect(profile).toMatchObject({ linked: true, platform_user_id: launch.platformUserId });

    const tags = (await post("/v1/players/tags", { page: 1 })).body.tags;
    expect(Object.fromEntries(tags.map((t: any) => [t.tag, t.players_count]))).toEqual({
      tutorial: 1,
      shared: 1,
      paid: 1,
    });
    expect(
      (await post("/v1/players/search", { tags: ["tutorial"] })).body.players.map((p: any) => p.identity_key),
    ).toEqual(["u:hero"]);

    // The old id and the device both lead to the one profile now.
    expect((await post("/v1/players/get", { partner_user_id: pseudonym })).body.profile.identity_key).toBe("u:hero");
    const late = await update({ partner_user_id: pseudonym, tags_add: ["late"] });
    expect(late.body.updated[0].identity_key).toBe("u:hero");
    expect(
      (await update({ device_id: launch.installationId, tags_add: ["device"] })).body.updated[0].identity_key,
    ).toBe("u:hero");

    // A repeat verify changes nothing more.
    expect(await verifyOnce()).toMatchObject({ valid: true, partner_user_id: "hero" });
    expect((await post("/v1/players/search", {})).body.players_info.total).toBe(1);
  });
});
