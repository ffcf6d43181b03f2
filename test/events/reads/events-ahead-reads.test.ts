import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { breakProject, bruteForce, byName, eventTimes, waitFor } from "../../support/service/events.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

describe("read your writes while another project's apply keeps failing", () => {
  it("answers a healthy project's charts, a tag change included, at once", async () => {
    const failing = await svc.createProject();
    const healthy = await svc.createProject();
    const times = eventTimes(svc, 2);
    const days = times.map((time) => time.day);
    const range = { from: days[0], to: days[1] };
    await breakProject(svc, failing.projectId);
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
    // Each project has its queue: the healthy one's events are applied while the other's fail.
    await waitFor(
      () => trends({}),
      (got) => JSON.stringify([...got]) === JSON.stringify([...bruteForce(raw, days)]),
    );
    const update = await svc.postJson(
      "/v1/players/update",
      { players: [{ partner_user_id: "dan", tags_add: ["gold"] }] },
      healthy.publicKey,
    );
    expect(update.status).toBe(200);
    const dan = raw.filter((event) => event.player === "dan");
    expect(await trends({ tags: ["gold"] })).toEqual(bruteForce(dan, days));
    expect(await trends({})).toEqual(bruteForce(raw, days));
    expect(await trends({ tags_none: ["gold"] })).toEqual(
      bruteForce(
        raw.filter((e) => e.player !== "dan"),
        days,
      ),
    );
  });
});
