import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { playerWriteContention } from "../../support/service/metrics.js";
import { startTestService, type TestService } from "../../support/service/service.js";
import { playersOn } from "../../support/db/round-points.js";

/**
 * Two service instances on one database. Each serialises writes to a player within itself, so
 * between them only the store's guards keep updates whole: a profile's version, a project's
 * registry counts. Runs on an engine that isolates updates per document (see vitest.config.ts).
 */
let a: TestService;
let b: TestService;
beforeAll(async () => {
  a = await startTestService();
  b = await startTestService({ DB_NAME: a.config.dbName });
});
afterAll(async () => {
  await b?.stop();
  await a?.stop();
});

/** Both instances' compare-and-swap race counters, summed, as their /metrics report them. */
async function contention() {
  const [x, y] = await Promise.all([playerWriteContention(a), playerWriteContention(b)]);
  return { conflicts: x.conflicts + y.conflicts, exhausted: x.exhausted + y.exhausted };
}

async function project() {
  const { publicKey, privateKey } = await a.createProject();
  const on = (svc: TestService) => ({
    update: (players: unknown[]) => svc.postJson("/v1/players/update", { players }, publicKey),
  });
  return {
    a: on(a),
    b: on(b),
    get: async (partnerUserId: string) =>
      (await b.postJson("/v1/players/get", { partner_user_id: partnerUserId }, privateKey)).body,
    tags: async () => (await a.postJson("/v1/players/tags", { page: 1, page_size: 100 }, privateKey)).body,
    search: async (body: object) => (await b.postJson("/v1/players/search", body, privateKey)).body,
  };
}

type Response = { status: number; body: any };
const applied = (responses: Response[]) => responses.filter((r) => r.status === 200 && r.body.updated.length === 1);
const rejectedWith = (responses: Response[], code: string) =>
  responses.filter((r) => r.status === 200 && r.body.rejected.length === 1 && r.body.rejected[0].code === code);
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe("players/update from two instances on one database", () => {
  it("concurrent increments and tag adds on the same players are exact, and the version guard decided races", async () => {
    const p = await project();
    const players = range(4).map((i) => `p${i}`);
    await p.a.update(players.map((id) => ({ partner_user_id: id, tags: ["seed"], traits: { coins: 0 } })));
    const before = await contention();

    // 24 calls from each instance, all in flight at once; each touches every player and adds one tag.
    const call = (instance: "a" | "b", i: number) =>
      p[instance].update(
        players.map((id) => ({ partner_user_id: id, traits_increment: { coins: 1 }, tags_add: [`${instance}${i}`] })),
      );
    const responses = await Promise.all(range(24).flatMap((i) => [call("a", i), call("b", i)]));

    for (const r of responses) expect(r).toMatchObject({ status: 200, body: { rejected: [] } });
    const expectedTags = new Set(["seed", ...range(24).flatMap((i) => [`a${i}`, `b${i}`])]);
    for (const id of players) {
      const { profile } = await p.get(id);
      expect(profile.traits.coins).toBe(48);
      expect(new Set(profile.tags)).toEqual(expectedTags);
    }
    const { tags } = await p.tags();
    expect(tags).toHaveLength(49);
    expect(tags.filter((t: any) => t.players_count !== 4)).toEqual([]);

    // Writers in two instances met: some writes were refused by the version guard and tried again.
    const after = await contention();
    expect(after.conflicts).toBeGreaterThan(before.conflicts);
    expect(after.exhausted).toBe(before.exhausted);
  });

  it("one tag given to different players through both instances at once: membership holds every one", async () => {
    const p = await project();
    // 96 players over the tag's 8 bucket documents: both instances read and write back the same buckets at once.
    const players = range(96).map((i) => `m${String(i).padStart(2, "0")}`);
    const responses = await Promise.all(
      players.map((id, i) => p[i % 2 === 0 ? "a" : "b"].update([{ partner_user_id: id, tags_add: ["shared"] }])),
    );
    for (const r of responses) expect(r).toMatchObject({ status: 200, body: { rejected: [] } });
    const found = await p.search({ tags: ["shared"], page_size: 100 });
    expect(found.players.map((player: any) => player.partner_user_id)).toEqual(players);
    expect(found.players_info.total).toBe(96);
  });

  it("devices of one player linking through both instances lose no tag or trait, and counts stay exact", async () => {
    const p = await project();
    await p.a.update([{ partner_user_id: "shared", tags_add: ["seed"] }]);
    const responses = await Promise.all(
      range(30).map((i) =>
        p[i % 2 ? "b" : "a"].update([
          { partner_user_id: "shared", device_id: `device-${i}`, tags_add: [`d${i}`], traits: { [`t${i}`]: i } },
        ]),
      ),
    );
    for (const r of responses) expect(r).toMatchObject({ status: 200, body: { rejected: [] } });
    const { profile } = await p.get("shared");
    expect(new Set(profile.tags)).toEqual(new Set(["seed", ...range(30).map((i) => `d${i}`)]));
    expect(Object.keys(profile.traits)).toHaveLength(30);
    const { tags } = await p.tags();
    expect(tags).toHaveLength(31);
    expect(tags.filter((t: any) => t.players_count !== 1)).toEqual([]);

    // Then each device writes alone, through either instance: every write lands on the partner's profile.
    await Promise.all(
      range(30).flatMap((i) => [
        p.a.update([{ device_id: `device-${i}`, traits_increment: { visits: 1 } }]),
        p.b.update([{ device_id: `device-${i}`, traits_increment: { visits: 1 } }]),
      ]),
    );
    expect((await p.get("shared")).profile.traits.visits).toBe(60);
  });

  // Every write answers and the fold ends: a fold whose tombstone lost to the device write folds again
  // (it once did so holding the round's own profile locks, and hung that player's writes for good).
  it("device-only writes racing a link through the other instance all answer, and no device profile stays live", async () => {
    const p = await project();
    for (const round of range(5)) {
      const [device, partner] = [`racer-${round}`, `owner-${round}`];
      const deviceWrite = () => p.b.update([{ device_id: device, tags_add: [`t${round}`] }]);
      await deviceWrite();
      const link = p.a.update([{ partner_user_id: partner, device_id: device, traits_increment: { visits: 1 } }]);
      const responses = await Promise.all([...range(20).map(deviceWrite), link]);
      for (const r of responses) expect(r).toMatchObject({ status: 200, body: { rejected: [] } });
      expect((await p.get(partner)).profile.tags).toEqual([`t${round}`]);
      const live = await a.database.db
        .collection("player_profiles")
        .countDocuments({ identity_key: `d:${device}`, folded_into: null });
      expect(live).toBe(0);
    }
    expect(Object.fromEntries((await p.tags()).tags.map((t: any) => [t.tag, t.players_count]))).toEqual(
      Object.fromEntries(range(5).map((i) => [`t${i}`, 1])),
    );
  });

  // A fold writes the device's tombstone first (guarded by the version it read, keeping the data it
  // merges), then the player's profile: a device-only write on the other instance either lands before
  // the tombstone (the tombstone loses and the fold runs again on the new data) or follows the link or
  // tombstone to the player. Written the other way round, the player's profile took an older snapshot
  // and a refold merged traits "where missing", dropping the racing write's increment.
  it("device-only increments racing a link through the other instance all reach the partner", async () => {
    const p = await project();
    // Up to 20 rounds; the first that loses an increment ends the test.
    for (const round of range(20)) {
      const [device, partner] = [`device-${round}`, `partner-${round}`];
      const deviceWrite = () => p.b.update([{ device_id: device, traits_increment: { visits: 1 } }]);
      await deviceWrite();
      const link = p.a.update([{ partner_user_id: partner, device_id: device, traits_increment: { visits: 1 } }]);
      const responses = await Promise.all([...range(20).map(deviceWrite), link]);
      for (const r of responses) expect(r).toMatchObject({ status: 200, body: { rejected: [] } });
      expect((await p.get(partner)).profile.traits.visits).toBe(22);
    }
  });

  // An entry rejected for a player limit was checked on the round's read: when that round's write of the
  // player loses to the other instance, the read was superseded and the entry is checked again.
  it("an entry rejected on a read another instance superseded runs again with the applied ones", async () => {
    const { projectId } = await a.createProject();
    const tags = range(49).map((i) => `t${i}`);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let paused!: () => void;
    const atPause = new Promise<void>((resolve) => (paused = resolve));
    let first = true;
    const { players: slow } = await playersOn(a.database, {
      // Between the first round's read and its profile write.
      point: "afterTombstones",
      fault: () => {
        if (!first) return;
        first = false;
        paused();
        return released;
      },
    });
    const { players: fast } = await playersOn(a.database);
    const entry = (ops: { tagsAdd?: string[]; tagsRemove?: string[] }) => ({
      partnerUserId: "crowded",
      tagsAdd: ops.tagsAdd ?? [],
      tagsRemove: ops.tagsRemove ?? [],
      traitsIncrement: {},
      traitsUnset: [],
    });
    await fast.update(projectId, [entry({ tagsAdd: tags })]);

    // Read at 49 tags: "x" makes 50, "y" would make 51.
    const call = slow.update(projectId, [entry({ tagsAdd: ["x"] }), entry({ tagsAdd: ["y"] })]);
    await atPause;
    await fast.update(projectId, [entry({ tagsRemove: ["t0", "t1"] })]);
    release();
    const { outcomes } = await call;

    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, true]);
    const profile = await fast.get(projectId, { partnerUserId: "crowded" });
    expect(profile!.tags).toEqual([...tags.slice(2), "x", "y"]);
  });

  it("a tag registered by both instances at once takes one slot: the project still fits exactly 500 tags", async () => {
    const p = await project();
    const shared = range(240).map((i) => `shared_${i}`);
    await Promise.all([p.a.update([{ partner_user_id: "warm-a" }]), p.b.update([{ partner_user_id: "warm-b" }])]);
    // Both instances give the same 48 tags to a player of their own, five times over, all at once.
    const responses = await Promise.all(
      range(5).flatMap((k) =>
        (["a", "b"] as const).map((on) =>
          p[on].update([{ partner_user_id: `${on}${k}`, tags_add: shared.slice(48 * k, 48 * (k + 1)) }]),
        ),
      ),
    );
    // At most 480 slots are ever taken at once, so no entry may be refused.
    expect(applied(responses)).toHaveLength(10);
    const listed = await p.tags();
    expect(listed.tags_info.total).toBe(240);
    expect(listed.tags.filter((t: any) => t.players_count !== 2)).toEqual([]);

    // 260 more tags fit exactly; a slot taken twice and not given back would refuse some of them.
    const fill = range(6).map((k) => ({
      partner_user_id: `fill${k}`,
      tags_add: range(k < 5 ? 50 : 10).map((i) => `fill_${k}_${i}`),
    }));
    expect((await p.a.update(fill)).body.rejected).toEqual([]);
    const over = await p.b.update([{ partner_user_id: "over", tags_add: ["one_too_many"] }]);
    expect(over.body.rejected).toMatchObject([{ index: 0, code: "project_tag_limit" }]);
  });

  // Three projects side by side: each gives the two instances a moment where both want the last slots.
  it("the project tag limit holds when both instances race for the last 10 slots", () =>
    Promise.all(range(3).map(() => raceForLastTen("tag"))));

  it("the project trait-key limit holds when both instances race for the last 10 slots", () =>
    Promise.all(range(3).map(() => raceForLastTen("trait"))));
});

/**
 * Fills a project to 10 below its tag or trait-key limit through instance a, then has both
 * instances race with entries of 6 new names (one fits), then of 1 new name (four fit).
 */
async function raceForLastTen(kind: "tag" | "trait"): Promise<void> {
  const p = await project();
  const limit = kind === "tag" ? 500 : 200;
  const code = `project_${kind}_limit`;
  const entry = (partnerUserId: string, names: string[]) =>
    kind === "tag"
      ? { partner_user_id: partnerUserId, tags_add: names }
      : { partner_user_id: partnerUserId, traits: Object.fromEntries(names.map((name) => [name, 1])) };

  const names = range(limit - 10).map((i) => `fill_${i}`);
  const fill = range(Math.ceil(names.length / 50)).map((k) => entry(`fill${k}`, names.slice(50 * k, 50 * (k + 1))));
  expect((await p.a.update(fill)).body.rejected).toEqual([]);
  // A call through b first, so that both instances meet the race with their caches warm, in step.
  expect((await p.b.update([entry("warm", ["fill_0"])])).body.rejected).toEqual([]);

  const race = (size: number, name: string) =>
    Promise.all(
      range(8).flatMap((i) =>
        (["a", "b"] as const).map((on) =>
          p[on].update([
            entry(
              `${name}-${on}${i}`,
              range(size).map((n) => `${name}_${on}${i}_${n}`),
            ),
          ]),
        ),
      ),
    );
  const six = await race(6, "six");
  expect(applied(six)).toHaveLength(1);
  expect(rejectedWith(six, code)).toHaveLength(15);
  const one = await race(1, "one");
  expect(applied(one)).toHaveLength(4);
  expect(rejectedWith(one, code)).toHaveLength(12);

  // Every slot is taken: a new name is refused, a registered one is not.
  const more = await p.b.update([entry("late", ["brand_new"]), entry("late2", ["fill_1"])]);
  expect(more.body.rejected.map((r: any) => [r.index, r.code])).toEqual([[0, code]]);
}
