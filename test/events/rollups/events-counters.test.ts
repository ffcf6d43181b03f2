import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { engineOf } from "../../../src/db/engine.js";
import { activityCodec } from "../../../src/events/activity/activity-chunk.js";
import { ActivityStore, markOf, monthsCodec } from "../../../src/events/activity/activity-store.js";
import { createSets } from "../../../src/sets/capability.js";
import { startTestService, type TestService } from "../../support/service/service.js";
import { bruteForce, byName, queueOf, waitFor } from "../../support/service/events.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

/** An event time `minutesAgo` before the service's now, and its day. */
function pastEvent(minutesAgo: number): { timestamp: string; day: string } {
  const timestamp = new Date(svc.clock.now().getTime() - minutesAgo * 60_000).toISOString();
  return { timestamp, day: timestamp.slice(0, 10) };
}

describe("counters that never wrap", () => {
  it("a thousand one-event calls of one name count exactly, for everyone and for a tag", async () => {
    const { publicKey, privateKey } = await svc.createProject();
    const players = ["ann", "ben", "cat", "dan"];
    await svc.postJson("/v1/players/update", { players: [{ partner_user_id: "ann", tags_add: ["vip"] }] }, publicKey);
    const sent: { name: string; player: string; day: string }[] = [];
    const calls = Array.from({ length: 1_000 }, (_, i) => {
      // Two days: the events of one call a minute apart, some a day earlier.
      const { timestamp, day } = pastEvent(i % 2 === 0 ? 10 : 24 * 60 + 10);
      const player = players[i % players.length];
      sent.push({ name: "tap", player, day });
      return { name: "tap", partner_user_id: player, timestamp };
    });
    // Each call its own queue segment, several in flight.
    const inFlight = 16;
    for (let from = 0; from < calls.length; from += inFlight) {
      await Promise.all(
        calls.slice(from, from + inFlight).map(async (event) => {
          const res = await svc.postJson("/v1/events", { events: [event] }, publicKey);
          expect(res.body.accepted).toBe(1);
        }),
      );
    }
    const days = [...new Set(sent.map((e) => e.day))].sort();
    const range = { from: days[0], to: days.at(-1) };
    const trends = async (filter: object) =>
      byName((await svc.postJson("/v1/events/trends", { ...range, ...filter }, privateKey)).body);
    await waitFor(
      () => queueOf(svc),
      (q) => q.queue_depth === 0,
      240_000,
    );
    const everyone = await trends({});
    expect(everyone).toEqual(bruteForce(sent, days));
    expect(await trends({ tags: ["vip"] })).toEqual(
      bruteForce(
        sent.filter((e) => e.player === "ann"),
        days,
      ),
    );
    const names = await svc.postJson("/v1/events/names", range, privateKey);
    expect(names.body.names).toEqual([{ name: "tap", events: "1000" }]);
  }, 300_000);

  it("keeps a player's and a tag's counts past 2^31 exact", async () => {
    // The activity written as the apply worker writes it, by stores of the test's own on the service's database: a
    // project the service has not read yet, so its reads find the chunks in the database.
    const { projectId, publicKey, privateKey } = await svc.createProject();
    await svc.postJson("/v1/players/update", { players: [{ partner_user_id: "whale", tags_add: ["vip"] }] }, publicKey);
    const sets = createSets({ database: svc.database, engine: engineOf(svc.database), cacheBytes: 0 });
    const activity = new ActivityStore(
      sets.chunks("event_activity", activityCodec),
      sets.chunks("event_activity_days", monthsCodec),
      sets.numbers,
    );
    const numbers = await sets.numbers.assign(projectId, ["u:whale", "d:bot0", "d:bot1"]);
    const { day } = pastEvent(60);
    const segment = (seq: number, players: [string, number][]) => ({
      seq,
      days: new Map([
        [
          day,
          new Map([["tap", players.map(([key, events]) => ({ number: numbers.get(key)!, events, sums: new Map() }))]]),
        ],
      ]),
    });
    // Two devices (31 * 2^26 + 31 and 2^26 + 1 events of a name on a day: the sum FerretDB 1.24 wraps in 32 bits)
    // fold into the tagged player; then ten one-event segments.
    const big = [31 * 2 ** 26 + 31, 2 ** 26 + 1];
    await activity.count(projectId, [
      segment(1, [
        ["d:bot0", big[0]],
        ["d:bot1", big[1]],
      ]),
    ]);
    for (const [index, device] of ["d:bot0", "d:bot1"].entries()) {
      const pairs = [{ day, name: "tap" }];
      await activity.move(projectId, markOf(2, index), numbers.get(device)!, numbers.get("u:whale")!, pairs);
    }
    for (let seq = 3; seq <= 12; seq++) await activity.count(projectId, [segment(seq, [["u:whale", 1]])]);
    const total = big[0] + big[1] + 10;
    expect(total).toBeGreaterThan(2 ** 31);
    for (const filter of [{}, { tags: ["vip"] }]) {
      const res = await svc.postJson("/v1/events/trends", { from: day, to: day, ...filter }, privateKey);
      expect(byName(res.body)).toEqual(new Map([["tap", [{ date: day, events: total, players: 1, sum: null }]]]));
    }
  });
});
