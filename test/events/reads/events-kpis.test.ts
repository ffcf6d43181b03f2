import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CohortModel, type ModelFilter } from "../../support/models/cohort-model.js";
import { eventTimes, queueOf, waitFor, type EventTime } from "../../support/service/events.js";
import { active, bucketTrends, retention, type RetentionAsked } from "../../support/models/kpi-model.js";
import { startTestService, type TestService } from "../../support/service/service.js";

/**
 * Retention, active players and trends by week and month against a brute force over the raw events sent and the
 * players' membership now: generated events over 45 days, the older half sent after the newer (first events that
 * arrive late), device-only players, devices folded into players, tags and traits changed just before a read.
 */
let svc: TestService;
let project: Awaited<ReturnType<typeof seed>>;
beforeAll(async () => {
  svc = await startTestService();
  project = await seed();
}, 120_000);
afterAll(() => svc.stop());

const DAYS = 45;
const NAMES = ["open", "match", "buy"];
const PARTNERS = Array.from({ length: 24 }, (_, i) => `p${String(i).padStart(2, "0")}`);
const DEVICES = ["dv0", "dv1", "dv2", "dv3"];
const tagsOf = (i: number) => [
  ...(i % 2 === 0 ? ["red"] : []),
  ...(i % 3 === 0 ? ["blue"] : []),
  ...(i % 5 === 0 ? ["green"] : []),
];

/** Whether player `i` has an event of name `n` on day `d`: a fixed scatter, denser on some players. */
const plays = (i: number, d: number, n: number) => (i * 31 + d * 17 + n * 7 + ((i * d) % 5)) % (3 + (i % 4)) === 0;

async function seed() {
  const { projectId, privateKey, publicKey } = await svc.createProject();
  const other = await svc.createProject("Other Game");
  const times = eventTimes(svc, DAYS);
  const model = new CohortModel();
  const post = (path: string, body: object, key = privateKey) => svc.postOk(path, body, key);
  await post("/v1/players/update", {
    players: PARTNERS.map((p, i) => ({
      partner_user_id: p,
      tags: tagsOf(i),
      traits: { tier: i % 4 === 0 ? "gold" : "free" },
    })),
  });
  PARTNERS.forEach((p, i) => {
    for (const tag of tagsOf(i)) model.tag(p, tag, true);
    model.trait(p, "tier", i % 4 === 0 ? "gold" : "free");
  });
  const who = [...PARTNERS.map((partner) => ({ partner })), ...DEVICES.map((device) => ({ device }))];
  const eventsOn = (keep: (d: number) => boolean) =>
    who.flatMap((player, i) =>
      times.flatMap((time: EventTime, d) =>
        NAMES.flatMap((name, n) => {
          if (!keep(d) || !plays(i, d, n)) return [];
          model.event(name, player, time.day);
          const id = "partner" in player ? { partner_user_id: player.partner } : { device_id: player.device };
          return [{ name, ...id, timestamp: time.timestamp }];
        }),
      ),
    );
  const send = async (events: object[]) => {
    for (let i = 0; i < events.length; i += 1000)
      await post("/v1/events", { events: events.slice(i, i + 1000) }, publicKey);
  };
  // The newer days first, applied; then the older ones: many players' first events arrive after their later ones.
  await send(eventsOn((d) => d >= DAYS / 2));
  await waitFor(
    () => queueOf(svc),
    (q) => q.queue_depth === 0,
  );
  await send(eventsOn((d) => d < DAYS / 2));
  // A device folded into a player (its history moved by the worker before the reads).
  await post("/v1/players/update", { players: [{ partner_user_id: "p03", device_id: "dv0" }] });
  model.link("dv0", "p03");
  // Another project's players of the same ids, every day: never counted here.
  await svc.postOk(
    "/v1/events",
    { events: times.map((t) => ({ name: "open", partner_user_id: "p01", timestamp: t.timestamp })) },
    other.publicKey,
  );
  await waitFor(
    () => queueOf(svc),
    (q) => q.queue_depth === 0,
  );
  return { projectId, privateKey, publicKey, model, post, days: times.map((t) => t.day) };
}

const today = () => svc.clock.now().toISOString().slice(0, 10);

/** Reads `path` and the brute force, again if the day turned between them (the answer's periods follow today). */
async function compare(path: string, body: object, expected: (today: string) => unknown, pick: (got: any) => unknown) {
  for (;;) {
    const before = today();
    const got = await svc.postOk(path, body, project.privateKey);
    if (before !== today()) continue;
    expect(pick(got)).toEqual(expected(before));
    return got;
  }
}

const range = () => ({ from: project.days[0], to: project.days.at(-1)! });
const unsplit = (got: { series: { tag: string | null }[] }) => {
  expect(got.series.map((s) => s.tag)).toEqual([null]);
  return (got.series[0] as any).cohorts ?? (got.series[0] as any).points;
};

describe("retention against a brute force", () => {
  const cases: [string, object, ModelFilter][] = [
    ["n_day by day", {}, {}],
    ["unbounded", { mode: "unbounded" }, {}],
    ["by week, 5 periods", { interval: "week", periods: 5 }, {}],
    ["by week, unbounded, default periods", { interval: "week", mode: "unbounded" }, {}],
    ["start and return names", { start_name: "buy", return_name: "match", periods: 10 }, {}],
    ["return name only, unbounded", { return_name: "buy", mode: "unbounded" }, {}],
    ["a tag", { tags: ["Red"] }, { tags: ["red"] }],
    ["two tags all", { tags: ["red", "blue"], tags_match: "all" }, { tags: ["red", "blue"], tags_match: "all" }],
    ["tags_none (device-only players carry none)", { tags_none: ["red"] }, { tags_none: ["red"] }],
    [
      "a trait and tags_none",
      { traits: { tier: "free" }, tags_none: ["blue"] },
      { traits: { tier: "free" }, tags_none: ["blue"] },
    ],
  ];
  for (const [title, body, filter] of cases) {
    it(title, async () => {
      const asked = { ...range(), ...body } as RetentionAsked;
      await compare(
        "/v1/events/retention",
        { ...range(), ...body },
        (now) => retention(project.model.counted(filter), { ...asked, today: now }),
        unsplit,
      );
    });
  }

  it("a cohort has the periods begun by today (yesterday's two), and returned[0] is players", async () => {
    const got = await compare(
      "/v1/events/retention",
      { from: project.days[0], to: today() },
      () => [31, 2, 1],
      (body) => [0, -2, -1].map((i) => body.series[0].cohorts.at(i).returned.length),
    );
    for (const cohort of got.series[0].cohorts) expect(cohort.returned[0]).toBe(cohort.players);
  });

  it("split by tags: the tags given, else every tag (fewer than 20), each with the filter", async () => {
    const asked = { ...range(), split_by: "tags", tags_none: ["green"] };
    for (const tags of [["blue", "red"], undefined]) {
      const got = await svc.postOk("/v1/events/retention", { ...asked, tags }, project.privateKey);
      const now = today();
      const bySeries = Object.fromEntries(got.series.map((s: any) => [s.tag, s.cohorts]));
      const shown = tags ?? ["red", "blue"];
      expect(Object.keys(bySeries).sort()).toEqual([...shown].sort());
      for (const tag of shown) {
        const events = project.model.counted({ tags: [tag], tags_none: ["green"] });
        expect(bySeries[tag]).toEqual(retention(events, { ...range(), today: now }));
      }
    }
  });
});

describe("active players against a brute force", () => {
  const cases: [string, object, ModelFilter, string[]?][] = [
    ["every event", {}, {}],
    ["names", { names: ["buy", "match"] }, {}, ["buy", "match"]],
    ["a tag and a trait", { tags: ["blue"], traits: { tier: "gold" } }, { tags: ["blue"], traits: { tier: "gold" } }],
    ["tags_none", { tags_none: ["blue", "green"] }, { tags_none: ["blue", "green"] }],
  ];
  for (const [title, body, filter, names] of cases) {
    it(title, async () => {
      const { from, to } = range();
      await compare(
        "/v1/events/active",
        { from, to, ...body },
        () => active(project.model.counted(filter), from, to, names),
        unsplit,
      );
    });
  }

  it("split by tags", async () => {
    const { from, to } = range();
    const got = await svc.postOk(
      "/v1/events/active",
      { from, to, split_by: "tags", tags: ["green", "red"] },
      project.privateKey,
    );
    expect(got.series.map((s: any) => s.tag)).toEqual(["green", "red"]);
    for (const series of got.series) {
      expect(series.points).toEqual(active(project.model.counted({ tags: [series.tag] }), from, to));
    }
  });
});

describe("trends by week and month against a brute force", () => {
  for (const interval of ["week", "month"] as const) {
    it(`by ${interval}: distinct players per bucket, a bucket's date its first day clipped to from`, async () => {
      const from = project.days[3];
      const { to } = range();
      const got = await svc.postOk("/v1/events/trends", { from, to, interval }, project.privateKey);
      const series = new Map(got.series.map((s: any) => [s.name, s.points]));
      expect([...series]).toEqual([...bucketTrends(project.model.counted({}), from, to, interval)]);
    });

    it(`by ${interval}, split by tags with tags_none, and names`, async () => {
      const { from, to } = range();
      const body = { from, to, interval, split_by: "tags", tags_none: ["blue"], names: ["open", "buy"] };
      const got = await svc.postOk("/v1/events/trends", body, project.privateKey);
      for (const tag of ["red", "green"]) {
        const expected = bucketTrends(project.model.counted({ tags: [tag], tags_none: ["blue"] }), from, to, interval);
        const shown = got.series.filter((s: any) => s.tag === tag);
        expect(shown.map((s: any) => s.name)).toEqual(["open", "buy"]);
        for (const s of shown) expect(s.points).toEqual(expected.get(s.name));
      }
    });
  }
});

describe("read your writes", () => {
  it("a fold and tag changes acknowledged just before the read are in it", async () => {
    const { model, post } = project;
    await post("/v1/players/update", {
      players: [
        { partner_user_id: "p05", device_id: "dv2" },
        { partner_user_id: "p07", tags_add: ["green"], tags_remove: ["red"] },
        { partner_user_id: "p02", tags: [] },
      ],
    });
    model.link("dv2", "p05");
    model.tag("p07", "green", true);
    model.tag("p07", "red", false);
    for (const tag of tagsOf(2)) model.tag("p02", tag, false);
    const { from, to } = range();
    const split = { split_by: "tags", tags: ["red", "green"] };
    const [ret, act, weeks] = await Promise.all([
      svc.postOk("/v1/events/retention", { from, to, ...split }, project.privateKey),
      svc.postOk("/v1/events/active", { from, to, ...split }, project.privateKey),
      svc.postOk("/v1/events/trends", { from, to, interval: "week", ...split }, project.privateKey),
    ]);
    const now = today();
    for (const [i, tag] of ["red", "green"].entries()) {
      const events = model.counted({ tags: [tag] });
      expect(ret.series[i].cohorts).toEqual(retention(events, { from, to, today: now }));
      expect(act.series[i].points).toEqual(active(events, from, to));
      const expected = bucketTrends(events, from, to, "week");
      for (const s of weeks.series.filter((one: any) => one.tag === tag))
        expect(s.points).toEqual(expected.get(s.name));
    }
    // Everyone: the folded device is one player with p05 from now on.
    await compare(
      "/v1/events/retention",
      { from, to },
      (day) => retention(model.counted({}), { from, to, today: day }),
      unsplit,
    );
  });

  it("a member's first events, applied after a read of its tag, are in the next read of it", async () => {
    const { model, post, publicKey } = project;
    // A member of green with no history yet, written before the first read: green's members stay as they are
    // through both reads, only the player's history is new.
    await post("/v1/players/update", { players: [{ partner_user_id: "p40", tags_add: ["green"] }] }, publicKey);
    model.tag("p40", "green", true);
    const { from, to } = range();
    const body = { from, to, split_by: "tags", tags: ["green"] };
    const cohorts = (got: any) => got.series[0].cohorts;
    const expected = (day: string) => retention(model.counted({ tags: ["green"] }), { from, to, today: day });
    await compare("/v1/events/retention", body, expected, cohorts);
    const time = eventTimes(svc, DAYS)[DAYS - 10];
    await post(
      "/v1/events",
      { events: [{ name: "open", partner_user_id: "p40", timestamp: time.timestamp }] },
      publicKey,
    );
    model.event("open", { partner: "p40" }, time.day);
    await waitFor(
      () => queueOf(svc),
      (q) => q.queue_depth === 0,
    );
    await compare("/v1/events/retention", body, expected, cohorts);
  });
});
