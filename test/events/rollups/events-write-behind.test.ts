import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { playerRollupId } from "../../../src/events/rollups/player-rollup.js";
import { bruteForce, byName, eventTimes, reservedSegments, waitFor } from "../../support/service/events.js";
import { startTestService, type TestService } from "../../support/service/service.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

type Cursor = { _id: string; applied?: number; written?: number };
type History = { _id: string; days?: unknown; hw?: number };

describe("player histories written behind by the owner", () => {
  it("are written once the worker is idle; one project's failing write holds back neither the others nor its charts", async () => {
    const broken = await svc.createProject();
    const healthy = await svc.createProject();
    const [{ timestamp, day }] = eventTimes(svc, 1);
    const db = svc.database.db;
    const histories = db.collection<History>("event_player_rollups");
    const cursor = () => db.collection<Cursor>("event_queue").findOne({ _id: "cursor" });
    const send = async (key: string, players: string[]) => {
      const events = players.map((player) => ({ name: "play", partner_user_id: player, timestamp }));
      expect((await svc.postJson("/v1/events", { events }, key)).body).toMatchObject({ accepted: players.length });
    };
    const allApplied = async () => {
      const reserved = await reservedSegments(svc);
      return waitFor(cursor, (doc) => doc?.applied === reserved);
    };
    // Each project's first apply fills the owner's memory of it whole; from then on its histories wait in memory.
    await send(broken.publicKey, ["ann"]);
    await send(healthy.publicKey, ["cat"]);
    await allApplied();
    await waitFor(cursor, (doc) => doc?.written === doc?.applied);

    // A history the worker cannot add to, stored behind the owner's back: the write behind of it fails.
    const annId = playerRollupId(broken.projectId, "u:ann");
    const annStored = await histories.findOne({ _id: annId });
    await histories.updateOne({ _id: annId }, { $set: { days: "x" } });
    await send(broken.publicKey, ["ann", "bob"]);
    await send(healthy.publicKey, ["cat", "dan"]);
    const applied = (await allApplied())!.applied!;

    // The healthy project's histories are written; the cursor records nothing written past the broken write.
    await waitFor(
      () => histories.findOne({ _id: playerRollupId(healthy.projectId, "u:dan") }),
      (doc) => doc?.hw !== undefined,
    );
    expect((await cursor())?.written).toBeLessThan(applied);
    expect(await histories.findOne({ _id: playerRollupId(broken.projectId, "u:bob") })).toBeNull();
    // Both projects' charts count every event, from the owner's memory.
    const trends = async (key: string) =>
      byName((await svc.postJson("/v1/events/trends", { from: day, to: day }, key)).body);
    const sent = (players: string[]) => players.map((player) => ({ name: "play", player, day, timestamp }));
    expect(await trends(broken.privateKey)).toEqual(bruteForce(sent(["ann", "ann", "bob"]), [day]));
    expect(await trends(healthy.privateKey)).toEqual(bruteForce(sent(["cat", "cat", "dan"]), [day]));

    // Repaired, the waiting changes are written, the cursor catches up, and the stored history is whole.
    await histories.updateOne({ _id: annId }, { $set: { days: annStored?.days } });
    await waitFor(cursor, (doc) => doc?.written === applied);
    const ann = await histories.findOne({ _id: annId });
    expect(Object.values((ann?.days as Record<string, Record<string, number>>)[day])).toEqual([2]);
    expect(await histories.findOne({ _id: playerRollupId(broken.projectId, "u:bob") })).not.toBeNull();
  });
});
