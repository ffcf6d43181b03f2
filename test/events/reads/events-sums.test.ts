import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventService } from "../../../gen/platformapi/v1/events_pb.js";
import { API_KEY_HEADER } from "../../../src/server/calls/auth.js";
import { CohortModel, sorted, type ModelFilter } from "../../support/models/cohort-model.js";
import { commandsOf } from "../../support/commands.js";
import { byName, eventTimes, queueOf, waitFor, type EventTime } from "../../support/service/events.js";
import { startTestService, type TestService } from "../../support/service/service.js";

let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;
let times: EventTime[];
let range: { from: string; to: string };
const model = new CohortModel();
const SUM = { property: "amount", names: ["purchase"] };

/** Values as a game sends them: integers, decimals, a string, a boolean, none. */
const AMOUNTS: (string | number | boolean | undefined)[] = [
  5,
  0.1,
  0.2,
  19.99,
  "7",
  true,
  undefined,
  -2.5,
  1_000_000,
  0.333333,
];

type Who = { partner?: string; device?: string };
let sent = 0;

/** Events of `name` by `who`, one a value of AMOUNTS in turn, spread over the range's days (oldest last: late). */
async function send(name: string, who: Who, count: number, { late = false } = {}) {
  const events = Array.from({ length: count }, () => {
    const amount = AMOUNTS[sent % AMOUNTS.length];
    const time = late ? times[0] : times[sent % times.length];
    sent++;
    const properties: Record<string, string | number | boolean> =
      amount === undefined ? { level: 3 } : { amount, level: 3 };
    model.event(name, who, time.day, properties);
    return {
      name,
      ...(who.partner && { partner_user_id: who.partner }),
      ...(who.device && { device_id: who.device }),
      timestamp: time.timestamp,
      properties,
    };
  });
  const answer = await svc.postOk("/v1/events", { events }, project.privateKey);
  expect(answer.accepted).toBe(count);
}

const drained = () =>
  waitFor(
    () => queueOf(svc),
    (queue) => queue.queue_depth === 0,
  );
const trends = (body: object, key = project.privateKey) =>
  svc.postJson("/v1/events/trends", { ...range, sum: "amount", ...body }, key);
const enable = (name: string, property: string, key = project.privateKey) =>
  svc.postJson("/v1/events/properties/update", { name, property, sum: true }, key);

async function expectAnswers(filter: ModelFilter) {
  const res = await trends(filter);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(sorted(byName(res.body)), JSON.stringify(filter)).toEqual(
    sorted(
      model.trends(
        filter,
        times.map((t) => t.day),
        SUM,
      ),
    ),
  );
}

/** Split by tags with no filter: every tag's series equals the model's. */
async function expectSplitAnswers() {
  const split = await trends({ split_by: "tags" });
  expect(split.status, JSON.stringify(split.body)).toBe(200);
  expect(sorted(byName(split.body))).toEqual(
    sorted(
      model.split(
        {},
        times.map((t) => t.day),
        SUM,
      ),
    ),
  );
}

beforeAll(async () => {
  svc = await startTestService();
  project = await svc.createProject();
  times = eventTimes(svc, 3);
  range = { from: times[0].day, to: times.at(-1)!.day };
  const players = [
    { partner_user_id: "ann", tags: ["vip", "red"], traits: { tier: "gold" } },
    { partner_user_id: "ben", tags: ["vip"], traits: { tier: "silver" } },
    { partner_user_id: "cat", tags: ["red"], traits: { tier: "gold" } },
  ];
  await svc.postOk("/v1/players/update", { players }, project.privateKey);
  for (const { partner_user_id, tags, traits } of players) {
    for (const tag of tags) model.tag(partner_user_id, tag, true);
    model.trait(partner_user_id, "tier", traits.tier);
  }
  await svc.postOk("/v1/players/traits/update", { key: "tier", materialise: true }, project.privateKey);
  // Before the sum is turned on: the back-fill counts these.
  await send("purchase", { partner: "ann" }, 12);
  await send("purchase", { partner: "ben" }, 7);
  await send("purchase", { device: "dev-1" }, 6);
  await send("level", { partner: "cat" }, 5);
  const repeat = { name: "purchase", partner_user_id: "cat", timestamp: times[1].timestamp, event_id: "once" };
  await svc.postOk("/v1/events", { events: [{ ...repeat, properties: { amount: 100 } }] }, project.privateKey);
  await svc.postOk("/v1/events", { events: [{ ...repeat, properties: { amount: 100 } }] }, project.privateKey);
  model.event("purchase", { partner: "cat" }, times[1].day, { amount: 100 });
  await drained();
});
afterAll(() => svc.stop());

describe("sums of event properties", () => {
  it("turns a sum on after counting the events kept, those applied meanwhile once", async () => {
    // Events sent while the back-fill runs land before or after its place in the queue: counted once either way.
    const [enabled] = await Promise.all([
      enable("purchase", "amount"),
      send("purchase", { partner: "cat" }, 9),
      send("purchase", { device: "dev-2" }, 4),
      send("purchase", { partner: "ann" }, 3),
    ]);
    expect(enabled.status).toBe(200);
    expect(enabled.body).toEqual({ property: { name: "purchase", property: "amount", sum: true } });
    const listed = await svc.postOk("/v1/events/properties", {}, project.privateKey);
    expect(listed).toEqual({ properties: [{ name: "purchase", property: "amount", sum: true }] });
    // Turning it on again changes nothing.
    expect((await enable("purchase", "amount")).status).toBe(200);
    await drained();
    await expectAnswers({});
  });

  it("equals a brute force on every path: everyone, a tag, a trait value, other filters, split by tags", async () => {
    await send("purchase", { partner: "ben" }, 5);
    await send("purchase", { partner: "ann" }, 4, { late: true });
    // The devices fold into cat and ben: their events and sums move with them (a player without a profile is in
    // no filter but everyone's).
    await svc.postOk(
      "/v1/players/update",
      {
        players: [
          { partner_user_id: "cat", device_id: "dev-1" },
          { partner_user_id: "ben", device_id: "dev-2" },
        ],
      },
      project.privateKey,
    );
    model.link("dev-1", "cat");
    model.link("dev-2", "ben");
    await drained();
    for (const filter of [
      {},
      { tags: ["vip"] },
      { traits: { tier: "gold" } },
      { tags: ["vip", "red"], tags_match: "all" as const },
      { tags: ["red"], traits: { tier: "gold" } },
      { tags_none: ["vip"] },
    ]) {
      await expectAnswers(filter);
    }
    await expectSplitAnswers();
    // A name without the sum has none: null.
    const level = (await trends({ names: ["level", "purchase"] })).body.series[0];
    expect(level.name).toBe("level");
    expect(level.points.every((point: any) => point.sum === null)).toBe(true);
  });

  it("is as of now: a tag change acknowledged before the read is in it, on every path", async () => {
    await send("purchase", { partner: "cat" }, 6);
    await drained();
    const change = [
      { partner_user_id: "cat", tags_add: ["vip"] },
      { partner_user_id: "ann", tags_remove: ["vip"] },
    ];
    await svc.postOk("/v1/players/update", { players: change }, project.privateKey);
    model.tag("cat", "vip", true);
    model.tag("ann", "vip", false);
    for (const filter of [
      { tags: ["vip"] },
      { tags: ["vip", "red"], tags_match: "all" as const },
      { tags_none: ["red"] },
    ]) {
      await expectAnswers(filter);
    }
    await expectSplitAnswers();
  });

  it("adds decimals exactly: 0.1 + 0.2 is 0.3", async () => {
    const other = await svc.createProject();
    const [time] = eventTimes(svc, 1);
    const events = [0.1, 0.2].map((amount) => ({
      name: "buy",
      partner_user_id: "p",
      timestamp: time.timestamp,
      properties: { amount },
    }));
    expect(
      (
        await svc.postJson(
          "/v1/events/properties/update",
          { name: "buy", property: "amount", sum: true },
          other.privateKey,
        )
      ).status,
    ).toBe(200);
    await svc.postOk("/v1/events", { events }, other.privateKey);
    const answer = await waitFor(
      () => svc.postOk("/v1/events/trends", { from: time.day, to: time.day, sum: "amount" }, other.privateKey),
      (body) => body.series[0]?.points[0].events === 2,
    );
    expect(answer.series[0].points[0].sum).toBe(0.3);
  });

  it("refuses a sum summed for none of the names asked, naming sum", async () => {
    for (const body of [{ sum: "score" }, { sum: "amount", names: ["level"] }]) {
      const res = await trends(body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("invalid_argument");
      expect(res.body.message).toMatch(/^sum: /);
    }
  });

  it("stops summing a property turned off", async () => {
    const off = await svc.postJson(
      "/v1/events/properties/update",
      { name: "level", property: "amount", sum: false },
      project.privateKey,
    );
    expect(off.body).toEqual({ property: { name: "level", property: "amount", sum: false } });
    expect((await enable("level", "amount")).status).toBe(200);
    expect((await trends({ names: ["level"] })).status).toBe(200);
    await svc.postOk(
      "/v1/events/properties/update",
      { name: "level", property: "amount", sum: false },
      project.privateKey,
    );
    expect((await trends({ names: ["level"] })).status).toBe(400);
  });

  it("sums at most 20 properties a project; the 21st is 400 naming sum", async () => {
    const limited = await svc.createProject();
    for (let i = 0; i < 20; i++) {
      expect((await enable("buy", `p${i}`, limited.privateKey)).status).toBe(200);
    }
    const over = await enable("buy", "p20", limited.privateKey);
    expect(over.status).toBe(400);
    expect(over.body.message).toMatch(/^sum: .*20/);
    const listed = await svc.postOk("/v1/events/properties", {}, limited.privateKey);
    expect(listed.properties).toHaveLength(20);
  });

  it("needs players:manage to change: the public and reader keys are 403; the reader lists", async () => {
    const reader = (await svc.createKey("reader", project.projectId)).key;
    for (const key of [project.publicKey, reader]) {
      const res = await enable("level", "level", key);
      expect(res.status).toBe(403);
      expect(res.body.code).toBe("permission_denied");
    }
    expect((await svc.postJson("/v1/events/properties", {}, project.publicKey)).status).toBe(403);
    expect((await svc.postOk("/v1/events/properties", {}, reader)).properties).toHaveLength(1);
    expect((await trends({}, reader)).status).toBe(200);
  });

  it("keeps each project's properties its own", async () => {
    const other = await svc.createProject();
    expect(await svc.postOk("/v1/events/properties", {}, other.privateKey)).toEqual({ properties: [] });
    const res = await svc.postJson("/v1/events/trends", { ...range, sum: "amount" }, other.privateKey);
    expect(res.status).toBe(400);
  });

  it("answers over gRPC too", async () => {
    const grpc = svc.client(EventService, "grpc");
    const headers = { [API_KEY_HEADER]: project.privateKey };
    const listed = await grpc.listProperties({}, { headers });
    expect(listed.properties.map(({ name, property }) => `${name}.${property}`)).toEqual(["purchase.amount"]);
    const answer = await grpc.trends({ ...range, names: ["purchase"], sum: "amount" }, { headers });
    const expected = model
      .trends(
        {},
        times.map((t) => t.day),
        SUM,
      )
      .get("purchase") as { sum: number }[];
    expect(answer.series[0].points.map((point) => point.sum)).toEqual(expected.map((point) => point.sum));
  });
});

describe("database commands per request", () => {
  const counted = (call: () => Promise<unknown>, background = false) =>
    commandsOf(svc.database.client, call, { background });

  it("turning a sum on: the list, the queue, the back-fill applied (the worker's commands included)", async () => {
    // Counted from an idle worker: every segment applied.
    await drained();
    const enabling = await counted(() => enable("level", "level"), true);
    // The worker reads the queues' states once a pass and beats its heartbeat (and reads who else is alive) every
    // third of a lease, idle passes included: as many as the wait for it fits. The back-fill reads the raw events of
    // each day with events of the name apart (3 here).
    const idle = new Set(["find event_queues", "update event_workers", "find event_workers"]);
    const work = enabling.filter((command) => !idle.has(command));
    expect(work.length, enabling.join(", ")).toBeLessThanOrEqual(20);
  });

  it("trends with a sum: the one read of the summed properties more, on everyone, a tag and two tags", async () => {
    for (const filter of [{}, { tags: ["vip"] }, { tags: ["vip", "red"], tags_match: "all" }]) {
      const body = { names: ["purchase"], ...filter };
      await trends(body);
      // Without the project's queue state: the read's freshness reads it, and so may an idle pass of the worker.
      const ownWork = (commands: string[]) => commands.filter((command) => command !== "find event_queues");
      const plain = ownWork(await counted(() => trends({ ...body, sum: undefined })));
      const summed = ownWork(await counted(() => trends(body)));
      const label = `${JSON.stringify(filter)}: ${plain.join(", ")} / ${summed.join(", ")}`;
      expect(
        summed.filter((command) => command === "find event_summed_properties"),
        label,
      ).toHaveLength(1);
      // The odd command beside a read (an API key's lookup once its cache expired) may fall in either.
      expect(summed.length, label).toBeLessThanOrEqual(plain.length + 2);
    }
  });
});
