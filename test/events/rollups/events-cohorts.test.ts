import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { bruteForce, byName, eventTimes, waitFor, type EventTime } from "../../support/service/events.js";
import { createLaunchFixture } from "../../support/service/launch.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

async function project() {
  const { publicKey, privateKey } = await svc.createProject();
  const times = eventTimes(svc, 3);
  const days = times.map((t) => t.day);
  const range = { from: days[0], to: days[2] };
  const post = (path: string, body: object, key = privateKey) => svc.postOk(path, body, key);
  return {
    times,
    days,
    range,
    ingest: (events: object[]) => post("/v1/events", { events }, publicKey),
    update: (players: object[]) => post("/v1/players/update", { players }, publicKey),
    trends: async (filter: object = {}) => byName(await post("/v1/events/trends", { ...range, ...filter })),
    /** Awaits the trends answer for `filter` to equal `expected`. */
    expectTrends: (filter: object, expected: Map<string, unknown>) =>
      waitFor(
        async () => byName(await post("/v1/events/trends", { ...range, ...filter })),
        (got) => JSON.stringify([...got]) === JSON.stringify([...expected]),
      ),
  };
}

type Raw = { name: string; player: string; day: string };

describe("tag cohorts, as of now", () => {
  it("tagging after the events moves the whole history into the tag's series; untagging takes it out", async () => {
    const p = await project();
    const raw: Raw[] = [];
    const events = p.times.flatMap(({ day, timestamp }, d) =>
      ["alice", "bob"].flatMap((player) =>
        Array.from({ length: d + 1 }, () => {
          raw.push({ name: "play", player, day });
          return { name: "play", partner_user_id: player, timestamp };
        }),
      ),
    );
    await p.ingest(events);
    await p.expectTrends({}, bruteForce(raw, p.days));
    expect(await p.trends({ tags: ["vip"] })).toEqual(new Map());

    await p.update([{ partner_user_id: "alice", tags_add: ["VIP"] }]);
    const alice = raw.filter((e) => e.player === "alice");
    await p.expectTrends({ tags: ["Vip"] }, bruteForce(alice, p.days));

    await p.update([{ partner_user_id: "alice", tags_remove: ["vip"] }]);
    await p.expectTrends({ tags: ["vip"] }, bruteForce([], p.days));
    // Everyone's series never moved.
    expect(await p.trends()).toEqual(bruteForce(raw, p.days));
  });

  it("a device's history follows it to the player it is folded into, without double-counting players", async () => {
    const p = await project();
    const raw: Raw[] = [];
    const send = (who: { partner_user_id?: string; device_id?: string }, player: string, at: EventTime) => {
      raw.push({ name: "open", player, day: at.day });
      return { name: "open", ...who, timestamp: at.timestamp };
    };
    await p.update([{ partner_user_id: "carol", tags_add: ["paying"] }]);
    await p.ingest([
      send({ device_id: "dev-1" }, "carol", p.times[0]),
      send({ device_id: "dev-1" }, "carol", p.times[1]),
      send({ partner_user_id: "carol" }, "carol", p.times[1]),
    ]);
    // Before the fold the device is a player of its own.
    const unfolded = raw.map((e, i) => (i < 2 ? { ...e, player: "dev-1" } : e));
    await p.expectTrends({}, bruteForce(unfolded, p.days));

    await p.update([{ partner_user_id: "carol", device_id: "dev-1", traits: { level: 3 } }]);
    await p.expectTrends({}, bruteForce(raw, p.days));
    await p.expectTrends({ tags: ["paying"] }, bruteForce(raw, p.days));
    // Later events of the device land on carol directly.
    await p.ingest([send({ device_id: "dev-1" }, "carol", p.times[2])]);
    await p.expectTrends({ tags: ["paying"] }, bruteForce(raw, p.days));
  });

  it("a verified launch folds the installation's history into the verified player", async () => {
    const launch = await createLaunchFixture(svc);
    await launch.setOwnership(true);
    const post = (path: string, body: object, key: string) => svc.postOk(path, body, key);
    const link = { platform_user_id: launch.platformUserId, partner_user_id: "dana" };
    await post("/v1/players/link", link, launch.privateKey);
    await post("/v1/players/update", { players: [{ partner_user_id: "dana", tags: ["paying"] }] }, launch.publicKey);
    const times = eventTimes(svc, 2);
    const days = times.map((t) => t.day);
    const raw: Raw[] = days.map((day) => ({ name: "boot", player: "dana", day }));
    const events = times.map(({ timestamp }) => ({ name: "boot", device_id: launch.installationId, timestamp }));
    await post("/v1/events", { events }, launch.publicKey);
    const trends = (filter: object) =>
      waitFor(
        async () =>
          byName(await post("/v1/events/trends", { from: days[0], to: days[1], ...filter }, launch.privateKey)),
        (got) => got.size > 0,
      );
    // Before the verify the installation is a player of its own, outside the tag.
    await trends({});
    expect(
      byName(await post("/v1/events/trends", { from: days[0], to: days[1], tags: ["paying"] }, launch.privateKey)),
    ).toEqual(new Map());

    const { token } = await launch.issue();
    expect((await launch.verify(token)).body.valid).toBe(true);
    expect(await trends({ tags: ["paying"] })).toEqual(bruteForce(raw, days));
  });

  it("any vs all on overlapping cohorts, trait filters and split by tag agree with a brute-force count", async () => {
    const p = await project();
    const players = Array.from({ length: 24 }, (_, i) => ({
      id: `pl${i}`,
      tags: [...(i % 2 === 0 ? ["red"] : []), ...(i % 3 === 0 ? ["blue"] : [])],
      tier: i % 4 === 0 ? "gold" : "free",
    }));
    await p.update(players.map((pl) => ({ partner_user_id: pl.id, tags: pl.tags, traits: { tier: pl.tier } })));
    const raw: Raw[] = [];
    const events = players.flatMap((pl, i) =>
      p.times.flatMap(({ day, timestamp }, d) =>
        (i + d) % 3 === 2
          ? []
          : ["a", "b"].slice(0, 1 + ((i + d) % 2)).map((name) => {
              raw.push({ name, player: pl.id, day });
              return { name, partner_user_id: pl.id, timestamp };
            }),
      ),
    );
    await p.ingest(events);
    await p.expectTrends({}, bruteForce(raw, p.days));

    const of = (keep: (pl: (typeof players)[number]) => boolean) => {
      const ids = new Set(players.filter(keep).map((pl) => pl.id));
      return bruteForce(
        raw.filter((e) => ids.has(e.player)),
        p.days,
      );
    };
    const has = (pl: (typeof players)[number], tag: string) => pl.tags.includes(tag);
    expect(await p.trends({ tags: ["red", "blue"] })).toEqual(of((pl) => has(pl, "red") || has(pl, "blue")));
    expect(await p.trends({ tags: ["red", "blue"], tags_match: "all" })).toEqual(
      of((pl) => has(pl, "red") && has(pl, "blue")),
    );
    expect(await p.trends({ traits: { tier: "gold" } })).toEqual(of((pl) => pl.tier === "gold"));
    expect(await p.trends({ tags: ["red"], traits: { tier: "gold" } })).toEqual(
      of((pl) => has(pl, "red") && pl.tier === "gold"),
    );

    const split = await p.trends({ split_by: "tags" });
    const expected = new Map<string, unknown>();
    for (const tag of ["red", "blue"]) {
      for (const [name, points] of of((pl) => has(pl, tag))) expected.set(`${tag}/${name}`, points);
    }
    expect(new Map([...split].sort())).toEqual(new Map([...expected].sort()));
  });
});

describe("tenancy", () => {
  it("another project's events never show, in trends or names", async () => {
    const a = await project();
    const b = await project();
    await a.ingest([{ name: "secret", partner_user_id: "x", timestamp: a.times[1].timestamp }]);
    await a.expectTrends({}, bruteForce([{ name: "secret", player: "x", day: a.days[1] }], a.days));
    expect(await b.trends()).toEqual(new Map());
  });
});
