import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlayerService } from "../../../gen/platformapi/v1/players_pb.js";
import { eventTimes, queueOf, waitFor } from "../../support/service/events.js";
import { startTestService, type TestService } from "../../support/service/service.js";

/**
 * players/data: one stream (NDJSON at /v1) of one record a line, the profile first, then each of the player's raw
 * events still kept (their device's too); nothing of another project's players of the same ids.
 */
let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;
/** Every event sent as "ann" or her device, in the order sent. */
const sent: { name: string; timestamp: string; partner_user_id?: string; device_id?: string; event_id?: string }[] = [];

const post = (path: string, body: object, key = project.privateKey) => svc.postOk(path, body, key);
const auth = () => ({ "x-api-key": project.privateKey });

/** players/data's lines for `who`: the first `{profile}`, then an `{event}` a line. */
async function dataLines(who: object, key = project.privateKey): Promise<any[]> {
  const res = await svc.postJson("/v1/players/data", who, key);
  expect(res).toMatchObject({ status: 200, headers: expect.any(Headers) });
  expect(res.headers.get("content-type")).toBe("application/x-ndjson");
  return res.body;
}

/** The events of players/data's lines after the first, in order: each line holds one and nothing else. */
const eventsOf = (lines: any[]) =>
  lines.slice(1).map((line) => {
    expect(Object.keys(line)).toEqual(["event"]);
    return line.event;
  });

beforeAll(async () => {
  svc = await startTestService();
  project = await svc.createProject();
  const [earlier, later] = eventTimes(svc, 2);
  await post("/v1/players/update", { players: [{ partner_user_id: "ann", tags: ["vip"], traits: { tier: "gold" } }] });
  const send = async (events: typeof sent) => {
    sent.push(...events);
    await svc.postOk("/v1/events", { events }, project.publicKey);
  };
  await send([{ name: "open", device_id: "ann-phone", timestamp: earlier.timestamp }]);
  await post("/v1/players/update", { players: [{ partner_user_id: "ann", device_id: "ann-phone" }] });
  // More than a page: 1,000 events a page.
  for (let call = 0; call < 2; call++) {
    await send(
      Array.from({ length: 600 }, (_, i) => ({
        name: i % 2 === 0 ? "buy" : "open",
        partner_user_id: "ann",
        timestamp: later.timestamp,
        event_id: `e-${call}-${i}`,
      })),
    );
  }
  await svc.postOk(
    "/v1/events",
    { events: [{ name: "open", partner_user_id: "ben", timestamp: later.timestamp, properties: { amount: 3 } }] },
    project.publicKey,
  );
  await svc.postOk(
    "/v1/events",
    { events: [{ name: "spy", partner_user_id: "ann", timestamp: later.timestamp }] },
    (await svc.createProject("Other Game")).publicKey,
  );
  await waitFor(
    () => queueOf(svc),
    (queue) => queue.queue_depth === 0,
  );
}, 120_000);
afterAll(() => svc.stop());

describe("players/data", () => {
  it("streams the profile, then every kept event of the player and their device, one a line", async () => {
    const lines = await dataLines({ partner_user_id: "ann" });
    expect(Object.keys(lines[0])).toEqual(["profile"]);
    expect(lines[0]).toMatchObject({ profile: { identity_key: "u:ann", tags: ["vip"] } });
    // 1,201 events, more than one read of the queue (1,000 a read): a line each.
    expect(lines).toHaveLength(1 + sent.length);
    const events = eventsOf(lines);
    expect(events).toEqual(
      sent.map((e) => ({
        name: e.name,
        partner_user_id: e.partner_user_id ?? null,
        device_id: e.device_id ?? null,
        timestamp: new Date(e.timestamp).toISOString(),
        properties: null,
        event_id: e.event_id ?? null,
      })),
    );
    // By the device: the same player.
    expect(eventsOf(await dataLines({ device_id: "ann-phone" }))).toEqual(events);
  });

  it("streams the same messages over Connect", async () => {
    const messages = [];
    for await (const message of svc.client(PlayerService).data({ partnerUserId: "ann" }, { headers: auth() })) {
      messages.push(message);
    }
    expect(messages[0].record).toMatchObject({ case: "profile", value: { identityKey: "u:ann" } });
    const events = messages.slice(1).map(({ record }) => (record.case === "event" ? record.value : undefined));
    expect(events.map((e) => e?.eventId ?? e?.deviceId)).toEqual(sent.map((e) => e.event_id ?? e.device_id));
  });

  it("answers a player's properties as sent, and nothing of an unknown one", async () => {
    const [ben, ...events] = await dataLines({ partner_user_id: "ben" });
    expect(ben).toEqual({ profile: null });
    expect(eventsOf([ben, ...events])).toMatchObject([
      { name: "open", partner_user_id: "ben", properties: { amount: 3 } },
    ]);
    expect(await dataLines({ partner_user_id: "nobody" })).toEqual([{ profile: null }]);
  });

  it("shows another project's key nothing of this project's players; a public key is refused (403)", async () => {
    const other = await svc.createProject("Third Game");
    expect(await dataLines({ partner_user_id: "ann" }, other.privateKey)).toEqual([{ profile: null }]);
    const res = await svc.postJson("/v1/players/data", { partner_user_id: "ann" }, project.publicKey);
    expect(res.status).toBe(403);
  });

  it("refuses a request without a player, and a cursor (the stream has none)", async () => {
    const none = await svc.postJson("/v1/players/data", {}, project.privateKey);
    expect(none.status).toBe(400);
    const cursor = await svc.postJson("/v1/players/data", { partner_user_id: "ann", cursor: "" }, project.privateKey);
    expect(cursor.status).toBe(400);
    expect(cursor.body.message).toMatch(/cursor/);
  });

  it("answers nothing of an erased player", async () => {
    await post("/v1/players/delete", { partner_user_id: "ann" });
    // The worker deletes the raw events once it applies the erasure's segment (which carries no events to count).
    const lines = await waitFor(
      () => dataLines({ partner_user_id: "ann" }),
      (answered) => answered.length === 1,
    );
    expect(lines).toEqual([{ profile: null }]);
    expect(await dataLines({ device_id: "ann-phone" })).toEqual([{ profile: null }]);
  });
});
