import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CohortRollupStore, tagCohort } from "../../../src/events/rollups/cohort-rollup-store.js";
import { ProjectNames } from "../../../src/events/rollups/event-name-store.js";
import { Planner } from "../../../src/events/apply/plan.js";
import { engineOf } from "../../../src/db/engine.js";
import { PlayerRollupStore } from "../../../src/events/rollups/player-rollup-store.js";
import type { PlayerRollup } from "../../../src/events/rollups/player-rollup.js";
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

  it("keeps cohort and player counts past 2^31 exact", async () => {
    const cohorts = new CohortRollupStore(svc.database.db, engineOf(svc.database, 0));
    const playerRollups = new PlayerRollupStore(svc.database.db, engineOf(svc.database, 0));
    const { projectId } = await svc.createProject();
    const { timestamp, day } = pastEvent(60);
    const month = day.slice(0, 7);
    const absorbing = { fresh: true };
    const write = async (seq: number, planner: Planner) => {
      const plan = planner.plan();
      await playerRollups.absorb(seq, plan.players, absorbing);
      await cohorts.absorb(seq, plan.cohorts, absorbing);
    };
    const planner = async (extra: [string, PlayerRollup][] = []) =>
      new Planner({
        projectId,
        firstDay: day,
        rollups: new Map([...(await playerRollups.read(projectId, ["u:whale"])), ...extra]),
        cohortsNow: new Map([
          ["u:whale", ["t/vip"]],
          ["d:bot0", []],
          ["d:bot1", []],
        ]),
        traitKeysNow: new Map(),
        summed: new Map(),
        names: new ProjectNames(["tap"]),
      });
    // Two devices fold into a tagged player: their histories (31 * 2^26 + 31 and 2^26 + 1 events of a name on a
    // day: the sum FerretDB 1.24 wraps in 32 bits) move into the player's and the tag's counts; then ten
    // one-event segments.
    const big = [31 * 2 ** 26 + 31, 2 ** 26 + 1];
    for (const [index, events] of big.entries()) {
      const identityKey = `d:bot${index}`;
      const device: PlayerRollup = {
        identityKey,
        days: { [day]: { _tap: events } },
        sums: {},
        cohorts: [],
        foldedInto: null,
        hw: 0,
      };
      const fold = await planner([[identityKey, device]]);
      fold.fold(identityKey, "u:whale");
      await write(index + 1, fold);
    }
    for (let seq = 3; seq <= 12; seq++) {
      const one = await planner();
      one.addEvents("u:whale", [{ n: "tap", t: new Date(timestamp), u: "whale", d: null, i: null, p: null }]);
      await write(seq, one);
    }
    const stored = (await playerRollups.read(projectId, ["u:whale"])).get("u:whale");
    const total = big[0] + big[1] + 10;
    expect(total).toBeGreaterThan(2 ** 31);
    expect(stored?.days[day]?._tap).toBe(total);
    expect((await cohorts.read(projectId, tagCohort("vip"), [month], new ProjectNames(["tap"])))[day]?._tap).toEqual({
      e: total,
      p: 1,
    });
  });
});
