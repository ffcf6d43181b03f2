import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExperimentService } from "../../gen/platformapi/v1/config_pb.js";
import { compareMeans, compareShares, sampleRatioPValue } from "../../src/config/results/statistics.js";
import { experimentFixture, modelTotals, type ExperimentFixture } from "../support/service/experiment-fixture.js";
import { startTestService, type TestService } from "../support/service/service.js";

// experiments/results: per variant, the exposed players and the metric counted from each one's exposure day equal a
// brute force over the generated events and exposures; the difference, interval and p-value are the textbook
// computation (statistics.ts, checked against SciPy) of those counts; the ratio check fires on a skewed split.

let svc: TestService;
let fixture: ExperimentFixture;
let reader: string;
const VARIANTS = ["a", "b", "c"];

beforeAll(async () => {
  svc = await startTestService({ RATE_LIMIT_PER_SECOND: "0" });
  fixture = await experimentFixture(svc, {
    seed: 48,
    groups: [
      { daysAgo: 9, players: 30 },
      { daysAgo: 6, players: 30 },
      { daysAgo: 2, players: 30 },
    ],
  });
  reader = (await svc.createKey("reader", fixture.projectId)).key;
}, 180_000);
afterAll(() => svc.stop());

const results = (body: object, key = reader) => svc.postJson("/v1/experiments/results", body, key);
const today = () => svc.clock.now().toISOString().slice(0, 10);

describe("experiments/results", () => {
  it.each([
    { kind: "return", days: 1 },
    { kind: "return", days: 4 },
    { kind: "event", days: 3, name: "buy" },
    { kind: "event", days: 1, name: "play" },
    { kind: "sum", days: 5, name: "buy", property: "gold" },
  ] as const)("counts $kind over $days days as a brute force does", async (metric) => {
    const { status, body } = await results({ name: "exp", metric });
    expect(status, JSON.stringify(body)).toBe(200);
    const model = modelTotals(fixture, metric, today(), VARIANTS);
    expect(body.control).toBe("a");
    expect(body.variants.map((one: { variant: string }) => one.variant)).toEqual(VARIANTS);
    const control = model.get("a")!;
    const compare = metric.kind === "sum" ? compareMeans : compareShares;
    for (const answer of body.variants) {
      const totals = model.get(answer.variant)!;
      expect(answer.exposed, answer.variant).toBe(totals.exposed);
      expect(answer.measured, answer.variant).toBe(totals.measured);
      expect(answer.value, answer.variant).toBeCloseTo(totals.total / totals.measured, 9);
      if (answer.variant === "a") {
        expect([answer.difference, answer.ci_low, answer.p_value]).toEqual([null, null, null]);
        continue;
      }
      const expected = compare(
        { n: control.measured, total: control.total, squares: control.squares },
        { n: totals.measured, total: totals.total, squares: totals.squares },
      )!;
      expect(answer.difference, answer.variant).toBeCloseTo(expected.difference, 9);
      expect(answer.ci_low, answer.variant).toBeCloseTo(expected.ciLow!, 9);
      expect(answer.ci_high, answer.variant).toBeCloseTo(expected.ciHigh!, 9);
      expect(answer.p_value, answer.variant).toBeCloseTo(expected.pValue!, 9);
    }
    const exposures = VARIANTS.map((variant) => model.get(variant)!.exposed);
    expect(body.sample_ratio.p_value).toBeCloseTo(sampleRatioPValue(exposures, [1, 1, 1]), 9);
    expect(body.sample_ratio.warning).toBe(false);
  });

  it("answers the same over gRPC, gRPC-Web and Connect", async () => {
    const metric = { kind: "event", days: 3, name: "buy" };
    const json = (await results({ name: "exp", metric })).body;
    for (const protocol of ["grpc", "grpc-web", "connect"] as const) {
      const client = svc.client(ExperimentService, protocol);
      const answer = await client.results({ name: "exp", metric }, { headers: { "x-api-key": reader } });
      expect(answer.control, protocol).toBe(json.control);
      expect(
        answer.variants.map((one) => [one.variant, one.exposed, one.measured, one.value, one.pValue ?? null]),
        protocol,
      ).toEqual(json.variants.map((one: any) => [one.variant, one.exposed, one.measured, one.value, one.p_value]));
      expect(answer.sampleRatio?.pValue, protocol).toBeCloseTo(json.sample_ratio.p_value, 12);
    }
  });

  it.each([
    ["an unknown experiment", { name: "nope", metric: { kind: "return", days: 1 } }, /^name: /],
    ["no metric", { name: "exp" }, /^metric: /],
    ["an unknown kind", { name: "exp", metric: { kind: "revenue", days: 1 } }, /^metric\.kind: /],
    ["days of 0", { name: "exp", metric: { kind: "return", days: 0 } }, /^metric\.days: /],
    ["days past 90", { name: "exp", metric: { kind: "return", days: 91 } }, /^metric\.days: /],
    ["an event without a name", { name: "exp", metric: { kind: "event", days: 1 } }, /^metric\.name: /],
    ["a sum without a property", { name: "exp", metric: { kind: "sum", days: 1, name: "buy" } }, /^metric\.property: /],
    [
      "a sum of a property not summed",
      { name: "exp", metric: { kind: "sum", days: 1, name: "play", property: "gold" } },
      /^metric\.property: /,
    ],
  ])("refuses %s with a 400 naming the field", async (_, body, message) => {
    const { status, body: answer } = await results(body);
    expect(status).toBe(400);
    expect(answer.message).toMatch(message);
  });

  it("is refused to the public key, and shows another project nothing of this one's", async () => {
    const other = await svc.createProject("Other");
    const body = { name: "exp", metric: { kind: "return", days: 1 } };
    expect((await results(body, other.privateKey)).body.message).toMatch(/^name: /);
    const publicKey = (await svc.createKey("public", fixture.projectId)).key;
    expect((await results(body, publicKey)).status).toBe(403);
  });

  it("warns when the exposures depart from the weights", async () => {
    // Exposed at 9:1:1, the weights then set to 1:1:1: the split no longer follows them.
    const skewed = await experimentFixture(svc, {
      seed: 7,
      weights: [9, 1, 1],
      groups: [{ daysAgo: 3, players: 60 }],
    });
    const body = { name: "exp", metric: { kind: "return", days: 1 } };
    const before = (await results(body, skewed.privateKey)).body;
    expect(before.sample_ratio.warning).toBe(false);
    const variants = VARIANTS.map((name) => ({ name, weight: 1 }));
    await svc.postOk("/v1/experiments/update", { name: "exp", variants, state: "running" }, skewed.privateKey);
    const after = (await results(body, skewed.privateKey)).body;
    const exposures = VARIANTS.map((variant) => skewed.exposed.filter((one) => one.variant === variant).length);
    expect(after.sample_ratio.p_value).toBeCloseTo(sampleRatioPValue(exposures, [1, 1, 1]), 12);
    expect(after.sample_ratio.p_value).toBeLessThan(0.001);
    expect(after.sample_ratio.warning).toBe(true);
  }, 120_000);
});
