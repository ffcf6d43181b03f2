import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Players } from "../../../src/players/players.js";
import type { PlayerStores } from "../../../src/players/storage/stores.js";
import { startTestService, type TestService } from "../../support/service/service.js";
import { playersOn } from "../../support/db/round-points.js";

let svc: TestService;
let players: Players;
let stores: PlayerStores;

beforeAll(async () => {
  // The test's own Players writes the service's database beside it, so the service keeps nothing of what it read
  // (CACHE_MB=0): what it keeps is only true while its instance is the one writer.
  svc = await startTestService({ CACHE_MB: "0" });
  // The launch-verify hook, as the launch capability calls it, on the service's own database.
  ({ players, stores } = await playersOn(svc.database));
});
afterAll(() => svc.stop());

async function project() {
  const created = await svc.createProject();
  const { privateKey, projectId } = created;
  return {
    projectId,
    update: async (entries: unknown[]) =>
      (await svc.postJson("/v1/players/update", { players: entries }, privateKey)).body,
    get: async (body: object) => (await svc.postJson("/v1/players/get", body, privateKey)).body,
    tagCounts: async () => {
      const res = await svc.postJson("/v1/players/tags", { page: 1, page_size: 100 }, privateKey);
      return Object.fromEntries(res.body.tags.map((t: any) => [t.tag, t.players_count]));
    },
  };
}

describe("device folding on a verified launch", () => {
  it("folds the device profile into the real one: tags unioned, traits added where missing, counted once", async () => {
    const p = await project();
    svc.clock.advance(-3_600_000);
    await p.update([{ device_id: "inst-1", tags_add: ["guest", "shared"], traits: { level: 9, device_only: "yes" } }]);
    svc.clock.advance(3_600_000);
    await p.update([{ partner_user_id: "alice", tags_add: ["shared", "paid"], traits: { level: 2 } }]);
    expect(await p.tagCounts()).toEqual({ guest: 1, shared: 2, paid: 1 });

    await players.onLaunchVerified({
      projectId: p.projectId,
      platformUserId: "plat-1",
      partnerUserId: "alice",
      installationId: "inst-1",
    });

    const { profile } = await p.get({ partner_user_id: "alice" });
    expect(profile).toMatchObject({
      identity_key: "u:alice",
      partner_user_id: "alice",
      platform_user_id: "plat-1",
      linked: true,
    });
    expect(profile.tags).toEqual(["shared", "paid", "guest"]);
    expect(profile.traits).toEqual({ level: 2, device_only: "yes" });
    // The device's first sighting (an hour earlier) is the player's first sighting.
    expect(Date.parse(profile.last_seen_at) - Date.parse(profile.first_seen_at)).toBeGreaterThanOrEqual(3_600_000);
    expect(await p.tagCounts()).toEqual({ guest: 1, shared: 1, paid: 1 });

    // The device now resolves to the real profile, for reads and writes.
    expect((await p.get({ device_id: "inst-1" })).profile.identity_key).toBe("u:alice");
    const res = await p.update([{ device_id: "inst-1", tags_add: ["from_device"] }]);
    expect(res.updated[0]).toMatchObject({ identity_key: "u:alice", linked: true });
    expect(res.updated[0].tags).toContain("from_device");
    expect((await p.get({ partner_user_id: "alice" })).profile.tags).toContain("from_device");
    expect(await p.tagCounts()).toMatchObject({ guest: 1, shared: 1, from_device: 1 });
  });

  it("turns a device-only profile into the partner profile when the partner had none, and creates none from nothing", async () => {
    const p = await project();
    await p.update([{ device_id: "inst-2", tags_add: ["guest"] }]);
    await players.onLaunchVerified({
      projectId: p.projectId,
      platformUserId: "plat-2",
      partnerUserId: "bob",
      installationId: "inst-2",
    });
    expect((await p.get({ partner_user_id: "bob" })).profile).toMatchObject({ tags: ["guest"], linked: true });
    expect(await p.tagCounts()).toEqual({ guest: 1 });

    await players.onLaunchVerified({
      projectId: p.projectId,
      platformUserId: "plat-3",
      partnerUserId: "carol",
      installationId: "inst-3",
    });
    expect((await p.get({ partner_user_id: "carol" })).found).toBe(false);
    // A profile created after the verify starts linked to the platform user.
    const res = await p.update([{ partner_user_id: "carol", tags_add: ["later"] }]);
    expect(res.updated[0]).toMatchObject({ linked: true, platform_user_id: "plat-3" });
    // And the installation already points at carol.
    await p.update([{ device_id: "inst-3", traits: { from: "device" } }]);
    expect((await p.get({ partner_user_id: "carol" })).profile.traits).toEqual({ from: "device" });
  });

  it("keeps the fold within 50 tags and drops the device's overflow from the counts", async () => {
    const p = await project();
    await p.update([{ partner_user_id: "dave", tags: Array.from({ length: 49 }, (_, i) => `own${i}`) }]);
    await p.update([{ device_id: "inst-4", tags: ["dev_a", "dev_b", "own0"] }]);
    await players.onLaunchVerified({
      projectId: p.projectId,
      platformUserId: "plat-4",
      partnerUserId: "dave",
      installationId: "inst-4",
    });
    const { profile } = await p.get({ partner_user_id: "dave" });
    expect(profile.tags).toHaveLength(50);
    expect(profile.tags).toContain("dev_a");
    const counts = await p.tagCounts();
    expect(counts).toMatchObject({ dev_a: 1, dev_b: 0, own0: 1 });
  });
});

describe("a device profile left beside its link", () => {
  // A device-only write that read no link, then stopped before it could fold its profile (a crash,
  // or a verify on another instance linking the device meanwhile): the launch no longer folds it on a
  // repeat launch, so the next write through the device does, once.
  it("is folded by the next write through the device, its tags counted once", async () => {
    const p = await project();
    await p.update([{ partner_user_id: "frank", tags_add: ["own"], traits: { level: 3 } }]);
    await p.update([{ device_id: "inst-5", tags_add: ["stray"], traits: { late: true, level: 1 } }]);
    const link = { partnerUserId: "frank", platformUserId: null };
    await stores.devices.linkMany(p.projectId, new Map([["inst-5", link]]), svc.clock.now());
    const liveDeviceProfiles = () =>
      svc.database.db
        .collection("player_profiles")
        .countDocuments({ project_id: p.projectId, identity_key: "d:inst-5", folded_into: null });
    expect(await liveDeviceProfiles()).toBe(1);

    const res = await p.update([{ device_id: "inst-5", tags_add: ["again"] }]);
    expect(res.updated[0]).toMatchObject({ identity_key: "u:frank", tags: ["own", "stray", "again"] });
    expect((await p.get({ partner_user_id: "frank" })).profile.traits).toEqual({ level: 3, late: true });
    expect(await liveDeviceProfiles()).toBe(0);
    expect(await p.tagCounts()).toEqual({ own: 1, stray: 1, again: 1 });

    // Nothing is left to fold: later writes and the verify hook change no count.
    await p.update([{ device_id: "inst-5", traits_increment: { level: 1 } }]);
    await players.onLaunchVerified({
      projectId: p.projectId,
      platformUserId: "plat-5",
      partnerUserId: "frank",
      installationId: "inst-5",
    });
    expect((await p.get({ device_id: "inst-5" })).profile).toMatchObject({
      identity_key: "u:frank",
      traits: { level: 4, late: true },
    });
    expect(await p.tagCounts()).toEqual({ own: 1, stray: 1, again: 1 });
  });
});

describe("an update entry carrying both identities", () => {
  it("links the device and folds its profile before applying the entry, counting its tags once", async () => {
    const p = await project();
    await p.update([{ device_id: "phone", tags_add: ["guest", "tutorial_done"], traits: { sessions: 3 } }]);
    const res = await p.update([
      {
        partner_user_id: "erin",
        device_id: "phone",
        tags_add: ["signed_in"],
        tags_remove: ["guest"],
        traits_increment: { sessions: 1 },
      },
    ]);
    expect(res.rejected).toEqual([]);
    expect(res.updated[0]).toMatchObject({
      identity_key: "u:erin",
      tags: ["tutorial_done", "signed_in"],
      linked: false,
    });
    expect((await p.get({ partner_user_id: "erin" })).profile.traits).toEqual({ sessions: 4 });
    expect((await p.get({ device_id: "phone" })).profile.identity_key).toBe("u:erin");
    expect(await p.tagCounts()).toEqual({ guest: 0, tutorial_done: 1, signed_in: 1 });
  });

  it("rejects the whole entry, fold included, when the result breaks a limit", async () => {
    const p = await project();
    await p.update([{ device_id: "tablet", tags_add: ["from_tablet"] }]);
    const res = await p.update([
      { partner_user_id: "frank", device_id: "tablet", tags_add: Array.from({ length: 50 }, (_, i) => `many${i}`) },
    ]);
    expect(res.rejected[0]).toMatchObject({ code: "player_tag_limit", partner_user_id: "frank", device_id: "tablet" });
    expect((await p.get({ device_id: "tablet" })).profile.identity_key).toBe("d:tablet");
    expect((await p.get({ partner_user_id: "frank" })).found).toBe(false);
  });
});

describe("a fold that stopped between the device's tombstone and the player's profile", () => {
  // The tombstone keeps the device's data; the next write through the device merges it, once.
  it("is completed by the next write through the device, exactly once", async () => {
    const p = await project();
    await p.update([{ partner_user_id: "gina", tags_add: ["own"], traits: { level: 1 } }]);
    await p.update([{ device_id: "inst-9", tags_add: ["stray"], traits: { visits: 2 } }]);
    const { players: stopping, repairSets } = await playersOn(svc.database, {
      point: "afterTombstones",
      fault: () => {
        throw new Error("stopped after the tombstones");
      },
    });
    const verified = {
      projectId: p.projectId,
      platformUserId: "plat-9",
      partnerUserId: "gina",
      installationId: "inst-9",
    };
    await expect(stopping.onLaunchVerified(verified)).rejects.toThrow("stopped after the tombstones");
    expect((await p.get({ partner_user_id: "gina" })).profile).toMatchObject({ tags: ["own"], traits: { level: 1 } });
    // The repair pass of the next start settles the stopped round's sets: the device counts no more.
    await repairSets(new Date(svc.clock.now().getTime() + 60_000));
    expect(await p.tagCounts()).toEqual({ own: 1, stray: 0 });

    const res = await p.update([{ device_id: "inst-9", traits_increment: { visits: 1 } }]);
    expect(res.updated[0]).toMatchObject({ identity_key: "u:gina", tags: ["own", "stray"] });
    expect((await p.get({ partner_user_id: "gina" })).profile.traits).toEqual({ level: 1, visits: 3 });
    expect(await p.tagCounts()).toEqual({ own: 1, stray: 1 });

    // Merged once: a tag the player then drops stays dropped through later device writes and verifies.
    await p.update([{ partner_user_id: "gina", tags_remove: ["stray"] }]);
    await p.update([{ device_id: "inst-9", traits_increment: { visits: 1 } }]);
    await players.onLaunchVerified(verified);
    expect((await p.get({ device_id: "inst-9" })).profile).toMatchObject({
      tags: ["own"],
      traits: { level: 1, visits: 4 },
    });
    expect(await p.tagCounts()).toEqual({ own: 1, stray: 0 });
  });
});
