import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventService } from "../../../gen/platformapi/v1/events_pb.js";
import { startTestService, type TestService } from "../../support/service/service.js";
import { queueOf, waitFor } from "../../support/service/events.js";

/**
 * `ingestOnly` and `sizeLimited` have no apply worker, so their queues fall behind (as the clock moves, as events
 * come); an applier started on the same database drains each.
 */
let ingestOnly: TestService;
let sizeLimited: TestService;
const appliers: TestService[] = [];
beforeAll(async () => {
  [ingestOnly, sizeLimited] = await Promise.all([
    startTestService({ EVENT_WORKER: "off", EVENT_MAX_LAG_SECONDS: "60" }),
    startTestService({ EVENT_WORKER: "off", EVENT_MAX_QUEUE_EVENTS: "100" }),
  ]);
});
afterAll(async () => {
  await Promise.all(appliers.map((applier) => applier.stop()));
  await Promise.all([ingestOnly.stop(), sizeLimited.stop()]);
});

const startApplier = async (svc: TestService) => {
  const applier = await startTestService({ DB_NAME: svc.config.dbName, LOG_LEVEL: "error" });
  appliers.push(applier);
  return applier;
};

const readyEvents = async (svc: TestService) =>
  (
    (await (await fetch(`${svc.baseUrl}/readyz`)).json()) as {
      events: { refusing_events: boolean; refusing_limits: string[] };
    }
  ).events;
/** `platform_event_ingest_refused` per limit. */
const refusedGauge = async (svc: TestService) => {
  const text = await (await fetch(`${svc.baseUrl}/metrics`)).text();
  const of = (limit: string) =>
    new RegExp(`^platform_event_ingest_refused{limit="${limit}"} (\\d+)$`, "m").exec(text)?.[1];
  return { lag: of("lag"), queue_size: of("queue_size") };
};

describe("POST /v1/events when the queue is behind", () => {
  it("answers 429 with Retry-After past EVENT_MAX_LAG_SECONDS, accepts nothing, and takes events again once drained", async () => {
    const { publicKey } = await ingestOnly.createProject();
    const send = (name: string) =>
      ingestOnly.postJson("/v1/events", { events: [{ name, partner_user_id: "p" }] }, publicKey);
    expect((await send("login")).body).toMatchObject({ accepted: 1, rejected: [] });
    expect((await readyEvents(ingestOnly)).refusing_events).toBe(false);
    expect(await refusedGauge(ingestOnly)).toEqual({ lag: "0", queue_size: "0" });

    // The login waits: a minute and a second later it is older than the limit.
    ingestOnly.clock.advance(61_000);
    const refused = await send("level.up");
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe("resource_exhausted");
    expect(refused.body.message).toMatch(/^events: the queue is 6\d s behind \(EVENT_MAX_LAG_SECONDS 60\)/);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(5);
    const overGrpc = ingestOnly
      .client(EventService)
      .ingest({ events: [{ name: "level.up", partnerUserId: "p" }] }, { headers: { "x-api-key": publicKey } });
    await expect(overGrpc).rejects.toMatchObject({ code: Code.ResourceExhausted });
    // Nothing of either call was queued; operators see why.
    expect((await queueOf(ingestOnly)).queue_depth).toBe(1);
    expect(await readyEvents(ingestOnly)).toMatchObject({ refusing_events: true, refusing_limits: ["lag"] });
    expect(await refusedGauge(ingestOnly)).toEqual({ lag: "1", queue_size: "0" });

    await startApplier(ingestOnly);
    await waitFor(
      () => queueOf(ingestOnly),
      (queue) => queue.queue_depth === 0,
    );
    // A measured lag stands for a second of the service's clock.
    ingestOnly.clock.advance(1_000);
    expect((await send("level.up")).body).toMatchObject({ accepted: 1, rejected: [] });
    expect((await readyEvents(ingestOnly)).refusing_events).toBe(false);
  });

  it("answers 429 with Retry-After once EVENT_MAX_QUEUE_EVENTS wait, accepts nothing of a refused call, and takes events again once drained", async () => {
    const { publicKey, privateKey } = await sizeLimited.createProject();
    // A flood: 10 calls of 30 events at once, each under a name of its own. The limit is 100 events waiting.
    // The clock stands still, so one measurement of the queue stands for the whole flood, however slow the machine.
    sizeLimited.clock.freeze();
    const call = (i: number) => ({
      events: Array.from({ length: 30 }, (_, j) => ({ name: `flood.${i}`, partner_user_id: `p${j}` })),
    });
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => sizeLimited.postJson("/v1/events", call(i), publicKey)),
    );
    const accepted = answers.flatMap((answer, i) => (answer.status === 200 ? [i] : []));
    const refused = answers.filter((answer) => answer.status !== 200);
    // Calls are admitted while fewer than 100 events wait: 0, 30, 60, 90 of them, whichever four come first.
    expect(accepted).toHaveLength(4);
    for (const i of accepted) expect(answers[i].body).toMatchObject({ accepted: 30, rejected: [] });
    for (const answer of refused) {
      expect(answer.status).toBe(429);
      expect(answer.body.code).toBe("resource_exhausted");
      expect(answer.body.message).toMatch(
        /^events: the queue holds 120 events not yet applied \(EVENT_MAX_QUEUE_EVENTS 100\); nothing was accepted/,
      );
      expect(Number(answer.headers.get("retry-after"))).toBeGreaterThanOrEqual(5);
    }
    expect((await queueOf(sizeLimited)).queue_depth).toBe(120);
    expect(await readyEvents(sizeLimited)).toMatchObject({ refusing_events: true, refusing_limits: ["queue_size"] });
    expect(await refusedGauge(sizeLimited)).toEqual({ lag: "0", queue_size: "1" });

    const applier = await startApplier(sizeLimited);
    await waitFor(
      () => queueOf(sizeLimited),
      (queue) => queue.queue_depth === 0,
    );
    // Only the accepted calls' events were ever queued: their names, 30 events each, and no other.
    const day = answers[accepted[0]].body.server_time.slice(0, 10);
    const { names } = await applier.postOk("/v1/events/names", { from: day, to: day }, privateKey);
    const expected = accepted.map((i) => ({ name: `flood.${i}`, events: "30" }));
    expect(names.sort((a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name))).toEqual(expected);

    // A measured depth stands for a second of the service's clock.
    sizeLimited.clock.advance(1_000);
    expect((await sizeLimited.postJson("/v1/events", call(10), publicKey)).body).toMatchObject({ accepted: 30 });
    expect(await readyEvents(sizeLimited)).toMatchObject({ refusing_events: false, refusing_limits: [] });
    expect(await refusedGauge(sizeLimited)).toEqual({ lag: "0", queue_size: "0" });
  });
});
