import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventService } from "../../../gen/platformapi/v1/events_pb.js";
import { eventTimes, queueOf, waitFor } from "../../support/service/events.js";
import { startTestService, type TestService } from "../../support/service/service.js";

/** Retention and active players as requests: bad input, scopes, another project, the four protocols. */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

describe("retention and active requests", () => {
  it("bad input is a 400 naming the field", async () => {
    const { privateKey } = await svc.createProject();
    const ok = { from: "2025-01-01", to: "2025-01-31" };
    const cases: [string, object, string][] = [
      ["/v1/events/retention", { to: "2025-01-31" }, "from"],
      ["/v1/events/retention", { ...ok, from: "2025-02-30" }, "from"],
      ["/v1/events/retention", { ...ok, from: "2025-02-01" }, "from"],
      ["/v1/events/retention", { ...ok, to: "2026-01-02" }, "from"],
      ["/v1/events/retention", { ...ok, periods: 0 }, "periods"],
      ["/v1/events/retention", { ...ok, periods: 91 }, "periods"],
      ["/v1/events/retention", { ...ok, interval: "month" }, "interval"],
      ["/v1/events/retention", { ...ok, mode: "rolling" }, "mode"],
      ["/v1/events/retention", { ...ok, start_name: "no spaces" }, "start_name"],
      ["/v1/events/retention", { ...ok, return_name: "" }, "return_name"],
      ["/v1/events/retention", { ...ok, split_by: "traits" }, "split_by"],
      ["/v1/events/retention", { ...ok, tags: ["bad tag!"] }, "tags"],
      ["/v1/events/retention", { ...ok, tags_none: ["_reserved"] }, "tags_none"],
      ["/v1/events/retention", { ...ok, tags_match: "some" }, "tags_match"],
      ["/v1/events/active", { ...ok, names: Array.from({ length: 51 }, (_, i) => `n${i}`) }, "names"],
      ["/v1/events/active", { ...ok, to: "2024-12-31" }, "from"],
      ["/v1/events/active", { ...ok, traits: { _key: 1 } }, "traits"],
      ["/v1/events/active", { ...ok, periods: 3 }, "periods"],
      ["/v1/events/trends", { ...ok, interval: "year" }, "interval"],
    ];
    for (const [path, body, field] of cases) {
      const res = await svc.postJson(path, body, privateKey);
      expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(res.body.code).toBe("invalid_argument");
      expect(res.body.message.startsWith(`${field}`), res.body.message).toBe(true);
    }
  });

  it("needs events:read: the public key is refused, no key is unauthenticated", async () => {
    const { publicKey } = await svc.createProject();
    const range = { from: "2025-01-01", to: "2025-01-31" };
    for (const path of ["/v1/events/retention", "/v1/events/active"]) {
      expect((await svc.postJson(path, range, publicKey)).status).toBe(403);
      expect((await svc.postJson(path, range)).status).toBe(401);
    }
  });

  it("counts only the caller's project, and answers the same over gRPC, gRPC-Web and Connect", async () => {
    const mine = await svc.createProject();
    const other = await svc.createProject("Other Game");
    const [first, second] = eventTimes(svc, 2);
    const send = (key: string, player: string, times: (typeof first)[]) =>
      svc.postOk(
        "/v1/events",
        { events: times.map((t) => ({ name: "open", partner_user_id: player, timestamp: t.timestamp })) },
        key,
      );
    await send(mine.publicKey, "ann", [first, second]);
    await send(other.publicKey, "ann", [first]);
    await send(other.publicKey, "bob", [first, second]);
    await waitFor(
      () => queueOf(svc),
      (q) => q.queue_depth === 0,
    );
    const range = { from: first.day, to: second.day };
    const retention = await svc.postOk("/v1/events/retention", range, mine.privateKey);
    // A period k has begun once its day has: "today" may be a day after second.day (just past midnight).
    const today = svc.clock.now().toISOString().slice(0, 10);
    const begun = (day: string) => (Date.parse(today) - Date.parse(day)) / 86_400_000 + 1;
    const returned = (day: string, counts: number[]) => Array.from({ length: begun(day) }, (_, k) => counts[k] ?? 0);
    expect(retention.series).toEqual([
      {
        tag: null,
        variant: null,
        cohorts: [
          { date: first.day, players: 1, returned: returned(first.day, [1, 1]) },
          { date: second.day, players: 0, returned: returned(second.day, [0]) },
        ],
      },
    ]);
    expect(typeof retention.complete_through).toBe("string");
    expect(retention.lag_seconds).toBe(0);
    const active = await svc.postOk("/v1/events/active", range, mine.privateKey);
    expect(active.series).toEqual([
      {
        tag: null,
        variant: null,
        points: [
          { date: first.day, dau: 1, wau: 1, mau: 1, new_players: 1 },
          { date: second.day, dau: 1, wau: 1, mau: 1, new_players: 0 },
        ],
      },
    ]);
    const headers = { "x-api-key": mine.privateKey };
    for (const protocol of ["grpc", "grpc-web", "connect"] as const) {
      const client = svc.client(EventService, protocol);
      const r = await client.retention(range, { headers });
      expect(
        r.series.map((s) => ({
          tag: s.tag ?? null,
          variant: s.variant ?? null,
          cohorts: s.cohorts.map(({ date, players, returned }) => ({ date, players, returned })),
        })),
      ).toEqual(retention.series);
      const a = await client.active(range, { headers });
      expect(
        a.series[0].points.map(({ date, dau, wau, mau, newPlayers }) => ({
          date,
          dau,
          wau,
          mau,
          new_players: newPlayers,
        })),
      ).toEqual(active.series[0].points);
    }
  });
});
