import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { breakNextSegment, bruteForce, byName, eventTimes, waitFor } from "../../support/service/events.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

describe("read your writes while the worker applies other projects' segments ahead of the cursor", () => {
  it("answers a healthy project's corrected charts at once while another project's apply keeps failing", async () => {
    const failing = await svc.createProject();
    const healthy = await svc.createProject();
    const times = eventTimes(svc, 2);
    const days = times.map((time) => time.day);
    const range = { from: days[0], to: days[1] };
    const db = svc.database.db;
    await breakNextSegment(svc);
    const send = async (key: string, events: object[]) => {
      const res = await svc.postJson("/v1/events", { events }, key);
      expect(res.body).toMatchObject({ accepted: events.length, rejected: [] });
    };
    await send(failing.publicKey, [{ name: "play", partner_user_id: "ann", timestamp: times[1].timestamp }]);
    const raw = ["cat", "dan", "eve"].flatMap((player, i) =>
      times.slice(0, 1 + (i % 2)).map(({ timestamp, day }) => ({ name: "play", player, day, timestamp })),
    );
    await send(
      healthy.publicKey,
      raw.map(({ name, player, timestamp }) => ({ name, partner_user_id: player, timestamp })),
    );
    const trends = async (filter: object) => {
      const res = await svc.postJson("/v1/events/trends", { ...range, ...filter }, healthy.privateKey);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return byName(res.body);
    };
    // The healthy project's events are applied ahead of the failing head.
    await waitFor(
      () => trends({}),
      (got) => JSON.stringify([...got]) === JSON.stringify([...bruteForce(raw, days)]),
    );
    const queue = db.collection<{ _id: string; applied?: number; ahead?: number[]; seq?: number }>("event_queue");
    // The worker writes a segment's rollups before it marks the segment ahead in the cursor: wait for the mark.
    const cursor = await waitFor(
      () => queue.findOne({ _id: "cursor" }),
      (doc) => (doc?.ahead?.length ?? 0) > 0,
    );
    // A sequence number reserved and never written: the look-ahead stops there, so the tag change's resync stays
    // unapplied and the change recorded (pending) while the charts are read.
    await queue.updateOne({ _id: "counter" }, { $inc: { seq: 1 } });

    const update = await svc.postJson(
      "/v1/players/update",
      { players: [{ partner_user_id: "dan", tags_add: ["gold"] }] },
      healthy.publicKey,
    );
    expect(update.status).toBe(200);
    const dan = raw.filter((event) => event.player === "dan");
    expect(await trends({ tags: ["gold"] })).toEqual(bruteForce(dan, days));
    expect(await trends({})).toEqual(bruteForce(raw, days));
    // Still while the failing project fails: its event waits, the cursor stays before it.
    const names = await svc.postJson("/v1/events/names", range, failing.privateKey);
    expect(names.body.names).toEqual([]);
    expect((await queue.findOne({ _id: "cursor" }))?.applied).toBe(cursor?.applied);
  });
});
