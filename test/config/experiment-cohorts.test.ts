import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventService } from "../../gen/platformapi/v1/events_pb.js";
import { projectIdRange } from "../../src/db/ids.js";
import { experimentFixture, type ExperimentFixture } from "../support/service/experiment-fixture.js";
import { startTestService, type TestService } from "../support/service/service.js";

// The exposed players of each variant are a cohort: every read that takes cohort filters takes experiment and
// variants (trends, names, retention, active, search, export), split_by variant gives one series per variant, each
// equal to a brute force over the exposures and events; unknown names are a 400 naming the field; an erasure takes
// the player out of the variants' sets and deletes their exposures.

let svc: TestService;
let fixture: ExperimentFixture;
const VARIANTS = ["a", "b", "c"];

beforeAll(async () => {
  svc = await startTestService({ RATE_LIMIT_PER_SECOND: "0" });
  fixture = await experimentFixture(svc, {
    seed: 4848,
    groups: [
      { daysAgo: 5, players: 20 },
      { daysAgo: 1, players: 20 },
    ],
  });
  // Profiles for every other exposed player and two unexposed ones, some of them vip: search and export read profiles.
  const profiled = [
    ...fixture.exposed.filter((_, i) => i % 2 === 0).map((one) => one.partner),
    ...fixture.others.slice(0, 2),
  ];
  await post("/v1/players/update", {
    players: profiled.map((partner, i) => ({ partner_user_id: partner, tags_add: i % 3 === 0 ? ["vip"] : ["base"] })),
  });
  vips = new Set(profiled.filter((_, i) => i % 3 === 0));
  withProfile = new Set(profiled);
}, 180_000);
afterAll(() => svc.stop());

let vips: Set<string>;
let withProfile: Set<string>;
const post = (path: string, body: object) => svc.postOk(path, body, fixture.privateKey);
const postJson = (path: string, body: object) => svc.postJson(path, body, fixture.privateKey);
const days = () => [...new Set(fixture.events.map((event) => event.day))].sort();
const range = () => ({ from: days()[0], to: days().at(-1)! });
const exposedTo = (variants: readonly string[]) =>
  new Set(fixture.exposed.filter((one) => variants.includes(one.variant)).map((one) => one.partner));

/** Per name, per day: distinct players of `players` with an event. */
function trendPlayers(players: ReadonlySet<string>) {
  const series = new Map<string, number[]>();
  for (const name of ["buy", "play"]) {
    series.set(
      name,
      days().map(
        (day) =>
          new Set(
            fixture.events
              .filter((event) => event.name === name && event.day === day && players.has(event.partner))
              .map((event) => event.partner),
          ).size,
      ),
    );
  }
  return series;
}

const pointsByName = (series: { name: string; points: { players: number }[] }[]) =>
  new Map(series.map((one) => [one.name, one.points.map((point) => point.players)]));

describe("experiment filters on every cohort read", () => {
  it("trends: the exposed players of the variants asked, all variants by default", async () => {
    for (const variants of [["b"], ["a", "c"], []]) {
      const body = await post("/v1/events/trends", { ...range(), names: ["buy", "play"], experiment: "exp", variants });
      expect(pointsByName(body.series), variants.join()).toEqual(
        trendPlayers(exposedTo(variants.length > 0 ? variants : VARIANTS)),
      );
    }
  });

  it("trends split by variant: one series per variant, with variant set, on every protocol", async () => {
    const body = await post("/v1/events/trends", {
      ...range(),
      names: ["play"],
      experiment: "exp",
      split_by: "variant",
    });
    expect(body.series.map((one: { variant: string }) => one.variant)).toEqual(VARIANTS);
    for (const one of body.series) {
      expect(one.points.map((point: { players: number }) => point.players)).toEqual(
        trendPlayers(exposedTo([one.variant])).get("play"),
      );
    }
    const grpc = await svc
      .client(EventService, "grpc")
      .trends(
        { ...range(), names: ["play"], experiment: "exp", variants: ["c", "a"], splitBy: "variant" },
        { headers: { "x-api-key": fixture.privateKey } },
      );
    expect(grpc.series.map((one) => one.variant)).toEqual(["c", "a"]);
    expect(grpc.series[0].points.map((point) => point.players)).toEqual(trendPlayers(exposedTo(["c"])).get("play"));
  });

  it("names: the events of the exposed players", async () => {
    const body = await post("/v1/events/names", { ...range(), experiment: "exp", variants: ["a"] });
    const players = exposedTo(["a"]);
    const count = (name: string) => fixture.events.filter((e) => e.name === name && players.has(e.partner)).length;
    expect(new Map(body.names.map((one: { name: string; events: string }) => [one.name, Number(one.events)]))).toEqual(
      new Map(["buy", "play"].filter((name) => count(name) > 0).map((name) => [name, count(name)])),
    );
  });

  it("active and retention, split by variant, equal the variant's own filter and a brute force", async () => {
    for (const path of ["/v1/events/active", "/v1/events/retention"]) {
      const split = await post(path, { ...range(), experiment: "exp", split_by: "variant" });
      expect(split.series.map((one: { variant: string }) => one.variant)).toEqual(VARIANTS);
      for (const one of split.series) {
        const alone = await post(path, { ...range(), experiment: "exp", variants: [one.variant] });
        expect(alone.series).toHaveLength(1);
        expect(alone.series[0].variant).toBeNull();
        expect(one.points ?? one.cohorts).toEqual(alone.series[0].points ?? alone.series[0].cohorts);
      }
    }
    const active = await post("/v1/events/active", { ...range(), experiment: "exp", variants: ["b"] });
    const players = exposedTo(["b"]);
    expect(active.series[0].points.map((point: { dau: number }) => point.dau)).toEqual(
      days().map(
        (day) =>
          new Set(fixture.events.filter((e) => e.day === day && players.has(e.partner)).map((e) => e.partner)).size,
      ),
    );
    const retention = await post("/v1/events/retention", { ...range(), experiment: "exp", variants: ["b"] });
    const started = retention.series[0].cohorts.reduce(
      (sum: number, cohort: { players: number }) => sum + cohort.players,
      0,
    );
    expect(started).toBe(new Set(fixture.events.filter((e) => players.has(e.partner)).map((e) => e.partner)).size);
  });

  it("search and export: the profiles of the exposed players, with the other filters", async () => {
    for (const [filter, expected] of [
      [{ experiment: "exp" }, [...withProfile].filter((p) => exposedTo(VARIANTS).has(p))],
      [{ experiment: "exp", variants: ["b", "c"] }, [...withProfile].filter((p) => exposedTo(["b", "c"]).has(p))],
      [{ experiment: "exp", tags: ["vip"] }, [...vips].filter((p) => exposedTo(VARIANTS).has(p))],
      [
        { experiment: "exp", tags_none: ["vip"] },
        [...withProfile].filter((p) => !vips.has(p) && exposedTo(VARIANTS).has(p)),
      ],
    ] as const) {
      const keys = expected.map((partner) => `u:${partner}`).sort();
      const search = await post("/v1/players/search", { ...filter, page_size: 100 });
      expect(
        search.players.map((player: { identity_key: string }) => player.identity_key),
        JSON.stringify(filter),
      ).toEqual(keys);
      expect(search.players_info.total).toBe(keys.length);
      const exported = await post("/v1/players/export", filter);
      expect(exported.map((line: { player: { identity_key: string } }) => line.player.identity_key)).toEqual(keys);
    }
  });

  it.each([
    ["/v1/events/trends", { experiment: "nope" }, /^experiment: /],
    ["/v1/events/trends", { experiment: "exp", variants: ["z"] }, /^variants: "z"/],
    ["/v1/events/trends", { variants: ["a"] }, /^variants: /],
    ["/v1/events/trends", { split_by: "variant" }, /^split_by: /],
    ["/v1/events/trends", { experiment: "exp", split_by: "experiments" }, /^split_by: /],
    ["/v1/events/names", { experiment: "nope" }, /^experiment: /],
    ["/v1/events/retention", { experiment: "exp", variants: ["z"], split_by: "variant" }, /^variants: /],
    ["/v1/events/active", { split_by: "variant" }, /^split_by: /],
    ["/v1/players/search", { experiment: "nope" }, /^experiment: /],
    ["/v1/players/export", { experiment: "exp", variants: ["a", "z"] }, /^variants: /],
  ])("%s refuses %j with a 400 naming the field", async (path, filter, message) => {
    const dated = path.startsWith("/v1/events") ? range() : {};
    const { status, body } = await postJson(path, { ...dated, ...filter });
    expect(status).toBe(400);
    expect(body.message).toMatch(message);
  });

  it("another project's reads know nothing of this one's experiment", async () => {
    const other = await svc.createProject("Other");
    const { status, body } = await svc.postJson("/v1/players/search", { experiment: "exp" }, other.privateKey);
    expect(status).toBe(400);
    expect(body.message).toMatch(/^experiment: /);
  });
});

describe("an erasure", () => {
  it("takes the player out of the variants' sets and deletes their exposures", async () => {
    const player = fixture.exposed.find((one) => withProfile.has(one.partner))!;
    const exposures = () =>
      svc.database.db
        .collection("experiment_exposures")
        .countDocuments({ _id: { ...projectIdRange(fixture.projectId) } as never });
    const before = await exposures();
    const results = () =>
      post("/v1/experiments/results", { name: "exp", metric: { kind: "return", days: 1 } }).then(
        (body) => body.variants.find((one: { variant: string }) => one.variant === player.variant).exposed,
      );
    const exposedBefore = await results();
    await post("/v1/players/delete", { partner_user_id: player.partner });
    expect(await exposures()).toBe(before - 1);
    expect(await results()).toBe(exposedBefore - 1);
    const search = await post("/v1/players/search", { experiment: "exp", variants: [player.variant], page_size: 100 });
    expect(search.players.map((one: { identity_key: string }) => one.identity_key)).not.toContain(
      `u:${player.partner}`,
    );
    const trends = await post("/v1/events/trends", { ...range(), experiment: "exp", variants: [player.variant] });
    const erased = new Set([player.partner]);
    const left = new Set([...exposedTo([player.variant])].filter((partner) => !erased.has(partner)));
    expect(pointsByName(trends.series)).toEqual(trendPlayers(left));
  });
});
