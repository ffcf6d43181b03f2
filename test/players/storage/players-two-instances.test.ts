import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { playersOn } from "../../support/db/round-points.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

const entry = (partnerUserId: string, ops: { tagsAdd?: string[]; tagsRemove?: string[] }) => ({
  partnerUserId,
  tagsAdd: ops.tagsAdd ?? [],
  tagsRemove: ops.tagsRemove ?? [],
  traitsIncrement: {},
  traitsUnset: [],
});

// Two service instances on one MongoDB database: their rounds on one player can write in either order; the sets of a
// round another instance overtook are written again from the profile as it is.
describe("two instances writing one player", () => {
  it("the sets follow the last profile even when the earlier round's write of its sets lands last", async () => {
    const { projectId, privateKey } = await svc.createProject();
    let release!: () => void;
    const paused = new Promise<void>((resolve) => (release = resolve));
    let reachedPause!: () => void;
    const atPause = new Promise<void>((resolve) => (reachedPause = resolve));
    const { players: slow } = await playersOn(svc.database, {
      point: "afterProfileWrites",
      fault: () => {
        reachedPause();
        return paused;
      },
    });
    const { players: fast } = await playersOn(svc.database);

    const first = slow.update(projectId, [entry("racer", { tagsAdd: ["flag"] })]);
    await atPause; // The slow instance wrote the profile with "flag", not yet its sets.
    await fast.update(projectId, [entry("racer", { tagsRemove: ["flag"] })]);
    release();
    await first;

    expect((await fast.get(projectId, { partnerUserId: "racer" }))!.tags).toEqual([]);
    const search = await svc.postJson("/v1/players/search", { tags: ["flag"] }, privateKey);
    expect(search.body.players_info.total).toBe(0);
    const tags = await svc.postJson("/v1/players/tags", { page: 1 }, privateKey);
    expect(tags.body.tags.map((t: any) => [t.tag, t.players_count])).toEqual([["flag", 0]]);
  });
});

// An erasure on MongoDB writes its markers version-guarded: one that loses to another instance's write runs its round
// again, and only the round whose markers all held removes the links and queues the history's erasure.
describe("an erasure racing another instance's write", () => {
  it("runs again, and unlinks once, after every marker is written", async () => {
    const { projectId } = await svc.createProject();
    const { players: other } = await playersOn(svc.database);
    await other.update(projectId, [entry("leaver", { tagsAdd: ["flag"] })]);
    const { players: eraser, stores: racing } = await playersOn(svc.database);
    let unlinks = 0;
    const unlinkMany = racing.devices.unlinkMany.bind(racing.devices);
    racing.devices.unlinkMany = async (...args) => {
      unlinks++;
      return unlinkMany(...args);
    };
    let raced = false;
    const writeSlots = racing.profiles.writeSlots.bind(racing.profiles);
    racing.profiles.writeSlots = async (id, writes) => {
      if (!raced && writes.some((write) => "erased" in write.next)) {
        raced = true; // Between the erasure's read and its markers, the other instance writes the player.
        await other.update(id, [entry("leaver", { tagsAdd: ["late"] })]);
      }
      return writeSlots(id, writes);
    };

    const outcome = await eraser.delete(projectId, { partnerUserId: "leaver" });

    expect(raced).toBe(true);
    expect(outcome).toMatchObject({ deleted: true, identityKey: "u:leaver" });
    expect(unlinks).toBe(1);
    expect(await other.get(projectId, { partnerUserId: "leaver" })).toBeNull();
  });
});
