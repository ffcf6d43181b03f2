import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventService } from "../gen/platformapi/v1/events_pb.js";
import { startTestService, type TestService } from "./support/service.js";
import { queueOf, waitFor } from "./support/events.js";

/** `ingestOnly` has no apply worker, so its queue falls behind as its clock moves; `applier` drains it. */
let ingestOnly: TestService;
let applier: TestService | undefined;
beforeAll(async () => {
  ingestOnly = await startTestService({ EVENT_WORKER: "off", EVENT_MAX_LAG_SECONDS: "60" });
});
afterAll(async () => {
  await applier?.stop();
  await ingestOnly.stop();
});

const readyEvents = async (svc: TestService) =>
  ((await (await fetch(`${svc.baseUrl}/readyz`)).json()) as { events: { refusing_events: boolean } }).events;
const refusedGauge = async (svc: TestService) =>
  /^platform_event_ingest_refused (\d+)$/m.exec(await (await fetch(`${svc.baseUrl}/metrics`)).text())?.[1];

describe("POST /v1/events when the queue is behind", () => {
  it("answers 429 with Retry-After past EVENT_MAX_LAG_SECONDS, accepts nothing, and takes events again once drained", async () => {
    const { publicKey } = await ingestOnly.createProject();
    const send = (name: string) =>
      ingestOnly.postJson("/v1/events", { events: [{ name, partner_user_id: "p" }] }, publicKey);
    expect((await send("login")).body).toMatchObject({ accepted: 1, rejected: [] });
    expect((await readyEvents(ingestOnly)).refusing_events).toBe(false);
    expect(await refusedGauge(ingestOnly)).toBe("0");

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
    expect((await readyEvents(ingestOnly)).refusing_events).toBe(true);
    expect(await refusedGauge(ingestOnly)).toBe("1");

    applier = await startTestService({ DB_NAME: ingestOnly.config.dbName, LOG_LEVEL: "error" });
    await waitFor(
      () => queueOf(ingestOnly),
      (queue) => queue.queue_depth === 0,
    );
    // A measured lag stands for a second of the service's clock.
    ingestOnly.clock.advance(1_000);
    expect((await send("level.up")).body).toMatchObject({ accepted: 1, rejected: [] });
    expect((await readyEvents(ingestOnly)).refusing_events).toBe(false);
  });
});
