import { afterAll, beforeAll, expect, it } from "vitest";
import { CohortModel, sorted, type ModelFilter } from "../../support/models/cohort-model.js";
import { byName, eventTimes, queueOf, waitFor, type EventTime } from "../../support/service/events.js";
import { bucketTrends } from "../../support/models/kpi-model.js";
import { startTestService, type TestService } from "../../support/service/service.js";

let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;
let times: EventTime[];
const model = new CohortModel();
const SUM = { property: "amount", names: ["buy"] };

beforeAll(async () => {
  svc = await startTestService();
  project = await svc.createProject();
  // Ten days back from today: at least two weeks, and two months at the turn of one.
  times = eventTimes(svc, 10);
  await svc.postOk("/v1/players/update", { players: [{ partner_user_id: "ann", tags: ["vip"] }] }, project.privateKey);
  model.tag("ann", "vip", true);
  const sum = { name: "buy", property: "amount", sum: true };
  await svc.postOk("/v1/events/properties/update", sum, project.privateKey);
  const events = times.flatMap((time, i) =>
    ["ann", "ben", `p${i % 3}`].map((player, j) => {
      const properties = { amount: (i + 1) * 1.25 + j };
      model.event(j === 2 ? "open" : "buy", { partner: player }, time.day, properties);
      return {
        name: j === 2 ? "open" : "buy",
        partner_user_id: player,
        timestamp: time.timestamp,
        properties,
      };
    }),
  );
  await svc.postOk("/v1/events", { events }, project.privateKey);
  await waitFor(
    () => queueOf(svc),
    (queue) => queue.queue_depth === 0,
  );
});
afterAll(() => svc.stop());

/** The brute force by bucket: events and distinct players of bucketTrends, a summed name's sum its days'. */
function expected(filter: ModelFilter, interval: "week" | "month") {
  const [from, to] = [times[0].day, times.at(-1)!.day];
  const days = times.map((t) => t.day);
  const daily = model.trends(filter, days, SUM) as Map<string, { date: string; sum?: number }[]>;
  const buckets = bucketTrends(model.counted(filter), from, to, interval);
  return new Map(
    [...buckets].map(([name, points]) => [
      name,
      points.map((point, i) => {
        const end = points[i + 1]?.date ?? "9999-12-31";
        const inBucket = daily.get(name)!.filter((day) => day.date >= point.date && day.date < end);
        const millionths = inBucket.reduce((total, day) => total + Math.round((day.sum ?? 0) * 1e6), 0);
        return { ...point, sum: SUM.names.includes(name) ? millionths / 1e6 : null };
      }),
    ]),
  );
}

for (const interval of ["week", "month"] as const) {
  it(`by ${interval}: a bucket's sum is its days', beside its events and distinct players`, async () => {
    for (const filter of [{}, { tags: ["vip"] }, { tags_none: ["vip"] }]) {
      const body = { from: times[0].day, to: times.at(-1)!.day, interval, sum: "amount", ...filter };
      const answer = await svc.postOk("/v1/events/trends", body, project.privateKey);
      expect(sorted(byName(answer)), JSON.stringify(filter)).toEqual(sorted(expected(filter, interval)));
    }
  });
}
