import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

async function project() {
  const { privateKey } = await svc.createProject();
  return {
    update: (players: unknown[]) => svc.postJson("/v1/players/update", { players }, privateKey),
    get: async (partnerUserId: string) =>
      (await svc.postJson("/v1/players/get", { partner_user_id: partnerUserId }, privateKey)).body,
    tags: async () => (await svc.postJson("/v1/players/tags", { page: 1, page_size: 100 }, privateKey)).body,
    tagPage: async (page: number) =>
      (await svc.postJson("/v1/players/tags", { page, page_size: 100 }, privateKey)).body,
  };
}

describe("concurrent players/update", () => {
  it("50 concurrent traits_increment of 1 add exactly 50", async () => {
    const p = await project();
    await p.update([{ partner_user_id: "counter", traits: { coins: 10 } }]);
    const results = await Promise.all(
      Array.from({ length: 50 }, () => p.update([{ partner_user_id: "counter", traits_increment: { coins: 1 } }])),
    );
    expect(results.every((r) => r.status === 200 && r.body.updated.length === 1)).toBe(true);
    expect((await p.get("counter")).profile.traits.coins).toBe(60);
  });

  it("concurrent adds of different tags to one player from many devices lose nothing, and counts stay exact", async () => {
    const p = await project();
    await p.update([{ partner_user_id: "shared", tags_add: ["seed"] }]);
    // Each "device" links itself to the player while adding its own tag and trait.
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        p.update([
          { partner_user_id: "shared", device_id: `device-${i}`, tags_add: [`d${i}`], traits: { [`t${i}`]: i } },
        ]),
      ),
    );
    expect(results.every((r) => r.status === 200 && r.body.rejected.length === 0)).toBe(true);
    const { profile } = await p.get("shared");
    expect(new Set(profile.tags)).toEqual(new Set(["seed", ...Array.from({ length: 30 }, (_, i) => `d${i}`)]));
    expect(Object.keys(profile.traits)).toHaveLength(30);
    const { tags } = await p.tags();
    expect(tags.every((t: any) => t.players_count === 1)).toBe(true);
    expect(tags).toHaveLength(31);

    // Then the devices write alone: each lands on the real profile.
    await Promise.all(
      Array.from({ length: 30 }, (_, i) => p.update([{ device_id: `device-${i}`, traits_increment: { visits: 1 } }])),
    );
    expect((await p.get("shared")).profile.traits.visits).toBe(30);
  });

  it("project tag limit holds under races: of two calls each adding the 500th tag, exactly one succeeds", async () => {
    const p = await project();
    // 499 tags over 10 players (at most 50 a player).
    const entries = Array.from({ length: 10 }, (_, player) => ({
      partner_user_id: `filler-${player}`,
      tags: Array.from({ length: player < 9 ? 50 : 49 }, (_, i) => `tag_${player}_${i}`),
    }));
    const filled = await p.update(entries);
    expect(filled.body.rejected).toEqual([]);

    const [a, b] = await Promise.all([
      p.update([{ partner_user_id: "racer-a", tags_add: ["last_a"] }]),
      p.update([{ partner_user_id: "racer-b", tags_add: ["last_b"] }]),
    ]);
    const outcomes = [a.body, b.body];
    expect(outcomes.filter((o) => o.updated.length === 1)).toHaveLength(1);
    const loser = outcomes.find((o) => o.rejected.length === 1);
    expect(loser.rejected[0]).toMatchObject({ index: 0, code: "project_tag_limit" });
    const total = (await p.tagPage(1)).tags_info.total;
    expect(total).toBe(500);

    // An existing tag can still be added; a new one cannot, and only that entry is rejected.
    const more = await p.update([
      { partner_user_id: "late", tags_add: ["brand_new"] },
      { partner_user_id: "late2", tags_add: ["tag_0_0"] },
    ]);
    expect(more.body.rejected.map((r: any) => [r.index, r.code])).toEqual([[0, "project_tag_limit"]]);
    expect(more.body.updated[0].tags).toEqual(["tag_0_0"]);
    expect((await p.get("late")).found).toBe(false);
  });

  it("project trait-key limit of 200 rejects only the offending entry, and a rejected entry leaves no registration", async () => {
    const p = await project();
    const entries = Array.from({ length: 4 }, (_, player) => ({
      partner_user_id: `k-${player}`,
      traits: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`key_${player}_${i}`, i])),
    }));
    expect((await p.update(entries)).body.rejected).toEqual([]);
    const res = await p.update([
      { partner_user_id: "k-x", tags_add: ["would_be_new"], traits: { fresh: 1 } },
      { partner_user_id: "k-y", traits: { key_0_0: 5 } },
    ]);
    expect(res.body.rejected.map((r: any) => [r.index, r.code])).toEqual([[0, "project_trait_limit"]]);
    expect(res.body.updated.map((u: any) => u.identity_key)).toEqual(["u:k-y"]);
    // The tag of the rejected entry was not registered.
    expect((await p.tags()).tags.map((t: any) => t.tag)).not.toContain("would_be_new");
  });
});
