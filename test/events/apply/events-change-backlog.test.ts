import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bruteForce, byName, eventTimes, queueOf, waitFor } from "../../support/service/events.js";
import { startTestService, type TestService } from "../../support/service/service.js";

// Issue 46's hostile run at a size CI affords, by the same mechanism: the apply worker off, so every event waits in the
// project's queue while a public key changes tags. 20,000 events of 2,000 players (the issue: a million events) and
// 2,000 tag changes through the public key, 100 a call (the issue: 20,000).
const PLAYERS = 2_000;
const EVENTS_PER_PLAYER = 10;
const PER_CALL = 100;
/** The next start is ready within this (issue 46): the one time the test asserts. */
const READY_WITHIN_MS = 10_000;

const players = Array.from({ length: PLAYERS }, (_, i) => `p${i}`);
const calls = <T>(items: readonly T[], size: number) =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ EVENT_WORKER: "off" });
});
afterAll(() => svc.stop());

describe("tag changes during an event backlog", () => {
  it("refuse none of the public or private key's writes, count at once, and the next start is ready within 10 s", async () => {
    const { publicKey, privateKey } = await svc.createProject();
    const times = eventTimes(svc, 2);
    const days = times.map((time) => time.day);
    const events = players.flatMap((player, i) =>
      Array.from({ length: EVENTS_PER_PLAYER }, (_, n) => ({
        name: n % 2 === 0 ? "play" : "buy",
        partner_user_id: player,
        timestamp: times[(i + n) % 2].timestamp,
      })),
    );
    for (const batch of calls(events, 1_000)) await svc.postOk("/v1/events", { events: batch }, publicKey);
    expect((await queueOf(svc)).queue_depth).toBe(events.length);

    // The public key tags every player of the backlog, 100 a call; between its calls the private key writes too.
    const answers: { key: string; status: number; body: unknown }[] = [];
    const update = async (key: string, apiKey: string, entries: object[]) => {
      const { status, body } = await svc.postJson("/v1/players/update", { players: entries }, apiKey);
      answers.push({ key, status, body: status === 200 ? undefined : body });
    };
    for (const [call, batch] of calls(players, PER_CALL).entries()) {
      await update(
        "public",
        publicKey,
        batch.map((partner_user_id) => ({ partner_user_id, tags_add: ["vip"] })),
      );
      await update("private", privateKey, [{ partner_user_id: players[call], tags_add: ["paid"] }]);
    }
    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
    expect(answers).toHaveLength(2 * (PLAYERS / PER_CALL));
    // Counted before the call answered, with every event still waiting.
    const total = async (tag: string) =>
      (await svc.postOk("/v1/players/search", { tags: [tag], page_size: 1 }, privateKey)).players_info.total;
    expect([await total("vip"), await total("paid")]).toEqual([PLAYERS, PLAYERS / PER_CALL]);
    expect((await queueOf(svc)).queue_depth).toBe(events.length);

    // The same database started again with its worker on: ready within the bound, however long the backlog.
    const first = svc;
    await first.service.close(1_000);
    await first.database.close();
    const starting = Date.now();
    svc = await startTestService({ DB_NAME: first.config.dbName });
    await waitFor(
      async () => (await fetch(`${svc.baseUrl}/readyz`)).status,
      (status) => status === 200,
    );
    expect(Date.now() - starting).toBeLessThan(READY_WITHIN_MS);

    // Once applied, the tags' charts equal a brute force over the raw events.
    await waitFor(
      () => queueOf(svc),
      (queue) => queue.queue_depth === 0,
      120_000,
    );
    const raw = events.map((e) => ({ name: e.name, player: e.partner_user_id, day: e.timestamp.slice(0, 10) }));
    const paid = new Set(players.slice(0, PLAYERS / PER_CALL));
    for (const [tag, holders] of [
      ["vip", raw],
      ["paid", raw.filter((e) => paid.has(e.player))],
    ] as const) {
      const trends = await svc.postOk("/v1/events/trends", { from: days[0], to: days[1], tags: [tag] }, privateKey);
      expect(byName(trends), tag).toEqual(bruteForce(holders, days));
    }
  });
});
