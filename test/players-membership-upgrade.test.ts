import type { Db } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ownerRoundsDone } from "./support/metrics.js";
import { startTestService, type TestService } from "./support/service.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

/** The tags listing's count and last-given time of each tag. */
async function listing(service: TestService, privateKey: string) {
  const res = await service.postOk("/v1/players/tags", { page: 1 }, privateKey);
  return Object.fromEntries(
    res.tags.map((t: { tag: string; players_count: number; last_seen_at: string }) => [
      t.tag,
      { count: t.players_count, lastGiven: t.last_seen_at },
    ]),
  );
}

/**
 * What an earlier version's crash left: `player`'s profile written (a copy of `copyOf`'s), its membership of `tags`
 * not, and the round's journal document naming them.
 */
async function cutRound(db: Db, projectId: string, round: { copyOf: string; player: string; tags: string[] }) {
  const profiles = db.collection("player_profiles");
  const copied = await profiles.findOne({ _id: `${projectId}/u:${round.copyOf}` as never });
  const identityKey = `u:${round.player}`;
  await profiles.insertOne({
    ...copied!,
    _id: `${projectId}/${identityKey}` as never,
    identity_key: identityKey,
    partner_user_id: round.player,
  });
  await db.collection("player_membership_journal").insertOne({
    _id: "cut-round" as never,
    project_id: projectId,
    identity_keys: [identityKey],
    tags: round.tags,
    started_at: new Date(0),
  });
}

describe("a database written by a version before counts moved beside membership", () => {
  it("is rebuilt at start: counts from the profiles, last-given times kept, an old journal's rounds gone", async () => {
    const { projectId, publicKey, privateKey } = await svc.createProject();
    const update = (players: object[]) => svc.postOk("/v1/players/update", { players }, publicKey);
    await update([
      { partner_user_id: "ann", tags_add: ["gold", "silver"] },
      { partner_user_id: "bob", tags_add: ["gold"] },
    ]);
    svc.clock.advance(3_600_000);
    await update([{ partner_user_id: "cat", tags_add: ["gold"] }]);
    await ownerRoundsDone(svc);
    const before = await listing(svc, privateKey);
    expect(before.gold.count).toBe(3);
    await svc.service.close(1_000);

    // What the earlier version left: its layout, its counts apart, no counts document beside the buckets, and a
    // journaled round that a crash cut after its profile write (dan has "gold" but no membership of it).
    const db = svc.database.db;
    const members = db.collection("player_tag_members");
    const counts = await members.findOne({ _id: `${projectId}/_counts` as never });
    await db
      .collection("player_tag_stats")
      .insertOne({ _id: projectId as never, counts: counts!.counts, seen: counts!.seen });
    await members.deleteOne({ _id: `${projectId}/_counts` as never });
    await db
      .collection("player_tag_members_layout")
      .updateOne({ _id: "layout" as never }, { $set: { layout: "8 buckets, sorted keys as one JSON string" } });
    await cutRound(db, projectId, { copyOf: "ann", player: "dan", tags: ["gold", "silver"] });

    const restarted = await startTestService({ DB_NAME: svc.config.dbName }, { clock: svc.clock });
    try {
      expect(await listing(restarted, privateKey)).toEqual({
        gold: { count: 4, lastGiven: before.gold.lastGiven },
        silver: { count: 2, lastGiven: before.silver.lastGiven },
      });
      const found = await restarted.postOk("/v1/players/search", { tags: ["silver"] }, privateKey);
      expect(found.players.map((p: { identity_key: string }) => p.identity_key)).toEqual(["u:ann", "u:dan"]);
      expect(await db.collection("player_tag_stats").countDocuments()).toBe(0);
      expect(await db.collection("player_membership_journal").countDocuments()).toBe(0);
    } finally {
      await restarted.service.close(1_000);
      await restarted.database.close();
    }
  });

  it("in the current layout, a round its journal holds is completed at start", async () => {
    const own = await startTestService();
    const { projectId, publicKey, privateKey } = await own.createProject();
    await own.postOk("/v1/players/update", { players: [{ partner_user_id: "eve", tags_add: ["gold"] }] }, publicKey);
    await ownerRoundsDone(own);
    await own.service.close(1_000);
    const db = own.database.db;
    await cutRound(db, projectId, { copyOf: "eve", player: "fay", tags: ["gold"] });

    const restarted = await startTestService({ DB_NAME: own.config.dbName });
    try {
      expect((await listing(restarted, privateKey)).gold.count).toBe(2);
      const found = await restarted.postOk("/v1/players/search", { tags: ["gold"] }, privateKey);
      expect(found.players.map((p: { identity_key: string }) => p.identity_key)).toEqual(["u:eve", "u:fay"]);
      expect(await db.collection("player_membership_journal").countDocuments()).toBe(0);
    } finally {
      await restarted.stop();
      await own.database.close();
    }
  });
});
