import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { bruteForce, byName, eventTimes, queueOf, waitFor } from "../../support/service/events.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

type Raw = { name: string; player: string; day: string };

async function project() {
  const { publicKey, privateKey } = await svc.createProject();
  const times = eventTimes(svc, 3);
  const days = times.map((t) => t.day);
  const post = (path: string, body: object, key = privateKey) => svc.postOk(path, body, key);
  const raw: Raw[] = [];
  /** `perPlayer` events a day for each player, names alternating. */
  const ingest = async (players: string[], perPlayer: number) => {
    const events = times.flatMap(({ day, timestamp }, d) =>
      players.flatMap((player, i) =>
        Array.from({ length: perPlayer }, (_, n) => {
          const name = (i + d + n) % 2 === 0 ? "win" : "loss";
          raw.push({ name, player, day });
          return { name, partner_user_id: player, timestamp };
        }),
      ),
    );
    for (let from = 0; from < events.length; from += 1000) {
      await post("/v1/events", { events: events.slice(from, from + 1000) }, publicKey);
    }
  };
  const drained = () =>
    waitFor(
      () => queueOf(svc),
      (q) => q.queue_depth === 0,
      120_000,
    );
  const trends = async (traits: object) =>
    byName(await post("/v1/events/trends", { from: days[0], to: days[2], traits }));
  /** The raw events of the players whose traits (as of now) match. */
  const expected = (holders: ReadonlyMap<string, Record<string, unknown>>, traits: Record<string, unknown>) =>
    bruteForce(
      raw.filter((e) => Object.entries(traits).every(([k, v]) => holders.get(e.player)?.[k] === v)),
      days,
    );
  /** Each trait key's state as the listing answers it. */
  const listed = async () =>
    new Map(
      (await post("/v1/players/traits", { page_size: 100 })).traits.map(
        (t: { key: string; materialised: boolean; ready: boolean }) => [t.key, t],
      ),
    );
  return { days, post, publicKey, privateKey, ingest, drained, trends, expected, listed };
}

describe("trait cohorts", () => {
  it("a filter on a materialised and on a non-materialised key agree with a brute-force count", async () => {
    const p = await project();
    const players = Array.from({ length: 30 }, (_, i) => `p${i}`);
    const traits = new Map(
      players.map((player, i) => [
        player,
        { tier: ["gold", "silver", "bronze"][i % 3], club: i % 4 < 2 ? "a" : "b", level: i % 5 },
      ]),
    );
    await p.ingest(players, 2);
    await p.post(
      "/v1/players/update",
      { players: players.map((player) => ({ partner_user_id: player, traits: traits.get(player) })) },
      p.publicKey,
    );
    await p.drained();

    // Not enabled and not proved (30 players).
    expect(await p.trends({ club: "a" })).toEqual(p.expected(traits, { club: "a" }));
    expect((await p.listed()).get("tier")).toEqual({ key: "tier", materialised: false, ready: false });

    const byPublicKey = await svc.postJson(
      "/v1/players/traits/update",
      { key: "tier", materialise: true },
      p.publicKey,
    );
    expect(byPublicKey.status).toBe(403);
    expect(byPublicKey.body.code).toBe("permission_denied");
    // Every key's cohorts are sets read from its column: a materialised key is ready at once, nothing back-filled.
    const enabled = await p.post("/v1/players/traits/update", { key: "tier", materialise: true });
    expect(enabled).toEqual({ key: "tier", materialised: true, ready: true });
    expect((await p.listed()).get("tier")).toEqual({ key: "tier", materialised: true, ready: true });
    for (const tier of ["gold", "silver", "bronze"]) {
      expect(await p.trends({ tier })).toEqual(p.expected(traits, { tier }));
    }
    expect(await p.trends({ tier: "gold", club: "b" })).toEqual(p.expected(traits, { tier: "gold", club: "b" }));
    expect(await p.trends({ level: 3 })).toEqual(p.expected(traits, { level: 3 }));

    // As of now: a player changing value takes its history along; new events land in the new value.
    await p.post(
      "/v1/players/update",
      { players: [{ partner_user_id: "p0", traits: { tier: "silver" } }] },
      p.publicKey,
    );
    traits.get("p0")!.tier = "silver";
    await p.ingest(["p0", "p3", "p4"], 1);
    await p.drained();
    for (const tier of ["gold", "silver", "bronze"]) {
      expect(await p.trends({ tier })).toEqual(p.expected(traits, { tier }));
    }
    expect(await p.trends({ club: "a" })).toEqual(p.expected(traits, { club: "a" }));
  });

  it("a key proves low-cardinality on its own; a high-cardinality key does not", async () => {
    const p = await project();
    const players = Array.from({ length: 100 }, (_, i) => `q${i}`);
    const traits = new Map(
      players.map((player, i) => [player, { region: ["eu", "us", "asia"][i % 3], nick: `n${i}` }]),
    );
    await p.ingest(players.slice(0, 60), 1);
    await p.drained();
    await p.post(
      "/v1/players/update",
      { players: players.map((player) => ({ partner_user_id: player, traits: traits.get(player) })) },
      p.publicKey,
    );
    await p.drained();
    for (const region of ["eu", "us", "asia"]) {
      expect(await p.trends({ region })).toEqual(p.expected(traits, { region }));
    }
    expect(await p.trends({ nick: "n7" })).toEqual(p.expected(traits, { nick: "n7" }));
    // 100 holders of 3 values prove `region`; 100 values do not prove `nick`.
    const listed = await p.listed();
    expect(listed.get("region")).toEqual({ key: "region", materialised: true, ready: true });
    expect(listed.get("nick")).toEqual({ key: "nick", materialised: false, ready: false });
  });

  it("enabling answers not_found for a key the project does not have, invalid_argument for a bad one", async () => {
    const p = await project();
    const call = (body: object) => svc.postJson("/v1/players/traits/update", body, p.privateKey);
    expect((await call({ key: "tier", materialise: true })).status).toBe(404);
    expect((await call({ key: "$where", materialise: true })).body.code).toBe("invalid_argument");
    await p.post("/v1/players/update", { players: [{ partner_user_id: "x", traits: { tier: "gold" } }] }, p.publicKey);
    expect((await call({ key: "tier" })).body.code).toBe("invalid_argument");
  });
});
