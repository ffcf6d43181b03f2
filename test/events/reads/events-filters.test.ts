import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { bruteForce, byName, eventTimes, waitFor } from "../../support/service/events.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

/** A player without a profile (never updated, events only) carries no tag and no trait. */
type Player = { id: string; tags: string[]; tier: string | null; profile: boolean };
type Raw = { name: string; player: string; day: string };

/**
 * 30 players over overlapping tags (red: every 2nd, blue: every 3rd, green: every 5th) and a trait, and 5 more with
 * events and no profile (a game that sends events before its first players/update), with events on three past days;
 * every filter's answer on trends, names and search is compared with a count over the raw events.
 */
async function cohortProject() {
  const { publicKey, privateKey } = await svc.createProject();
  const times = eventTimes(svc, 3);
  const days = times.map((time) => time.day);
  const post = (path: string, body: object, key = privateKey) => svc.postOk(path, body, key);
  const players: Player[] = Array.from({ length: 35 }, (_, i) =>
    i < 30
      ? {
          id: `pl${String(i).padStart(2, "0")}`,
          tags: [...(i % 2 === 0 ? ["red"] : []), ...(i % 3 === 0 ? ["blue"] : []), ...(i % 5 === 0 ? ["green"] : [])],
          tier: i % 4 === 0 ? "gold" : "free",
          profile: true,
        }
      : { id: `np${i}`, tags: [], tier: null, profile: false },
  );
  await post(
    "/v1/players/update",
    {
      players: players
        .filter((pl) => pl.profile)
        .map((pl) => ({ partner_user_id: pl.id, tags: pl.tags, traits: { tier: pl.tier } })),
    },
    publicKey,
  );
  const raw: Raw[] = [];
  const events = players.flatMap((pl, i) =>
    days.flatMap((day, d) =>
      (i + d) % 3 === 2
        ? []
        : ["a", "b"].slice(0, 1 + ((i + d) % 2)).map((name) => {
            raw.push({ name, player: pl.id, day });
            return { name, partner_user_id: pl.id, timestamp: times[d].timestamp };
          }),
    ),
  );
  await post("/v1/events", { events }, publicKey);
  const range = { from: days[0], to: days[2] };
  const trends = async (filter: object) => byName(await post("/v1/events/trends", { ...range, ...filter }));
  await waitFor(
    () => trends({}),
    (got) => JSON.stringify([...got]) === JSON.stringify([...bruteForce(raw, days)]),
  );
  const of = (keep: (pl: Player) => boolean) => {
    const ids = new Set(players.filter(keep).map((pl) => pl.id));
    return raw.filter((e) => ids.has(e.player));
  };
  return {
    players,
    days,
    update: (entries: object[]) => post("/v1/players/update", { players: entries }, publicKey),
    trends,
    names: async (filter: object) => (await post("/v1/events/names", { ...range, ...filter })).names as unknown[],
    search: async (filter: object) => {
      const body = await post("/v1/players/search", { page_size: 100, ...filter });
      return {
        keys: body.players.map((p: { identity_key: string }) => p.identity_key),
        total: body.players_info.total,
      };
    },
    /** What trends answers for the players that `keep` selects. */
    expected: (keep: (pl: Player) => boolean) => bruteForce(of(keep), days),
    expectedNames: (keep: (pl: Player) => boolean) => {
      const totals = new Map<string, number>();
      // int64 in proto JSON: a string.
      for (const e of of(keep)) totals.set(e.name, (totals.get(e.name) ?? 0) + 1);
      return [...totals]
        .map(([name, events]) => ({ name, events: String(events) }))
        .sort((a, b) => Number(b.events) - Number(a.events) || (a.name < b.name ? -1 : 1));
    },
    /** What search answers: the players with a profile (as `now` has them) that `keep` selects. */
    expectedSearch: (keep: (pl: Player) => boolean, now = (pl: Player) => pl) => {
      const keys = players
        .map(now)
        .filter((pl) => pl.profile && keep(pl))
        .map((pl) => `u:${pl.id}`)
        .sort();
      return { keys, total: keys.length };
    },
  };
}

const has = (pl: Player, tag: string) => pl.tags.includes(tag);

/** Each filter as sent, and which players it selects. */
const FILTERS: [string, object, (pl: Player) => boolean][] = [
  ["none of one tag", { tags_none: ["Red"] }, (pl) => !has(pl, "red")],
  ["none of two tags", { tags_none: ["red", "BLUE"] }, (pl) => !has(pl, "red") && !has(pl, "blue")],
  [
    "any, none",
    { tags: ["red", "blue"], tags_none: ["green"] },
    (pl) => (has(pl, "red") || has(pl, "blue")) && !has(pl, "green"),
  ],
  [
    "all, none",
    { tags: ["red", "blue"], tags_match: "all", tags_none: ["green"] },
    (pl) => has(pl, "red") && has(pl, "blue") && !has(pl, "green"),
  ],
  [
    "one tag, none, trait",
    { tags: ["red"], tags_none: ["blue"], traits: { tier: "gold" } },
    (pl) => has(pl, "red") && !has(pl, "blue") && pl.tier === "gold",
  ],
  ["none, trait", { tags_none: ["green"], traits: { tier: "free" } }, (pl) => !has(pl, "green") && pl.tier === "free"],
  ["two tags, all", { tags: ["red", "blue"], tags_match: "all" }, (pl) => has(pl, "red") && has(pl, "blue")],
  ["two tags, any", { tags: ["red", "green"] }, (pl) => has(pl, "red") || has(pl, "green")],
  ["a tag and a trait", { tags: ["blue"], traits: { tier: "gold" } }, (pl) => has(pl, "blue") && pl.tier === "gold"],
  ["a tag, none of itself", { tags: ["red"], tags_none: ["red"] }, () => false],
  ["a trait alone", { traits: { tier: "free" } }, (pl) => pl.tier === "free"],
  ["everyone", {}, () => true],
];

describe("cohort filters, tags_none among them, against a brute-force count", () => {
  it("trends, names and search answer every filter exactly", async () => {
    const p = await cohortProject();
    for (const [label, filter, keep] of FILTERS) {
      expect(await p.trends(filter), `trends: ${label}`).toEqual(p.expected(keep));
      expect(await p.names(filter), `names: ${label}`).toEqual(p.expectedNames(keep));
      expect(await p.search(filter), `search: ${label}`).toEqual(p.expectedSearch(keep));
    }
  });

  it("split by tags applies tags_none (and traits) to every split series; excluded tags get no series", async () => {
    const p = await cohortProject();
    const splitOf = (tags: string[], keep: (pl: Player) => boolean) => {
      const expected = new Map<string, unknown>();
      for (const tag of tags) {
        for (const [name, points] of p.expected((pl) => has(pl, tag) && keep(pl)))
          expected.set(`${tag}/${name}`, points);
      }
      return new Map([...expected].sort());
    };
    const sorted = (series: Map<string, unknown>) => new Map([...series].sort());

    const noGreen = (pl: Player) => !has(pl, "green");
    expect(sorted(await p.trends({ split_by: "tags", tags_none: ["green"] }))).toEqual(
      splitOf(["red", "blue"], noGreen),
    );
    expect(sorted(await p.trends({ split_by: "tags", tags: ["red", "blue"], tags_none: ["green"] }))).toEqual(
      splitOf(["red", "blue"], noGreen),
    );
    expect(sorted(await p.trends({ split_by: "tags", tags_none: ["blue"], traits: { tier: "gold" } }))).toEqual(
      splitOf(["red", "green"], (pl) => !has(pl, "blue") && pl.tier === "gold"),
    );
  });

  it("a tag change shows in tags_none in the very next read, both ways", async () => {
    const p = await cohortProject();
    const filter = { tags_none: ["green"] };
    // pl01 gets green, pl00 loses it; np30, with events and no profile so far, gets it, np31 a profile without it.
    await p.update([
      { partner_user_id: "pl01", tags_add: ["green"] },
      { partner_user_id: "pl00", tags_remove: ["green"] },
      { partner_user_id: "np30", tags_add: ["green"] },
      { partner_user_id: "np31", tags_add: ["red"] },
    ]);
    const green = (pl: Player) =>
      ["pl01", "np30"].includes(pl.id) ? true : pl.id === "pl00" ? false : has(pl, "green");
    const profiled = (pl: Player) => ({ ...pl, profile: pl.profile || ["np30", "np31"].includes(pl.id) });
    expect(await p.trends(filter)).toEqual(p.expected((pl) => !green(pl)));
    expect(await p.names(filter)).toEqual(p.expectedNames((pl) => !green(pl)));
    expect(await p.search(filter)).toEqual(p.expectedSearch((pl) => !green(pl), profiled));
  });

  it("a bad tags_none names the field", async () => {
    const { privateKey } = await svc.createProject();
    const [{ day }] = eventTimes(svc, 1);
    for (const [path, body] of [
      ["/v1/events/trends", { from: day, to: day, tags_none: ["no way!"] }],
      ["/v1/events/names", { from: day, to: day, tags_none: ["no way!"] }],
      ["/v1/players/search", { tags_none: ["no way!"] }],
    ] as const) {
      const res = await svc.postJson(path, body, privateKey);
      expect(res.status, path).toBe(400);
      expect(res.body.message, path).toMatch(/^tags_none: "no way!" is not a valid tag/);
    }
  });
});
