import { BSON, type CommandSucceededEvent } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storedChangedPlayers, type StoredChangedPlayers } from "../../support/db/changed-players.js";
import { commandsOf } from "../../support/commands.js";
import { bruteForce, byName, eventTimes, reservedSegments, waitFor } from "../../support/service/events.js";
import { ownerMembershipWritten, ownerRoundsDone } from "../../support/service/metrics.js";
import { startTestService, type TestService } from "../../support/service/service.js";
import { needsOwner } from "../../../src/db/engine.js";

// The hostile run of a public key during an event backlog, at a size CI affords: calls of long ids and many tags
// while the apply worker moves nothing, so every change waits behind the events.
const PLAYERS = 20;
const ROUNDS = 8;
const players = Array.from({ length: PLAYERS }, (_, i) => `player-${i}-`.padEnd(256, "x"));
const tagSet = (set: "a" | "b") => Array.from({ length: 45 }, (_, i) => `${set}${i}-`.padEnd(64, "t"));
/** Documents a project's record may span, and the size none may approach (the engines' limit is 16 MiB). */
const MAX_DOCUMENTS = 16;
const MAX_DOCUMENT_BYTES = 2 ** 20;

let svc: TestService;
/** API keys looked up once for the run: a read's figures are its own, however long the rounds before it took. */
const KEY_CACHE = { API_KEY_CACHE_SECONDS: "300" };
beforeAll(async () => {
  svc = await startTestService(KEY_CACHE);
});
afterAll(() => svc.stop());

const sum = (sizes: readonly number[]) => sizes.reduce((total, size) => total + size, 0);

/** The database commands of `call` and the bytes their replies carried. */
async function costOf(call: () => Promise<unknown>): Promise<{ commands: string[]; bytes: number }> {
  let bytes = 0;
  const onReply = (event: CommandSucceededEvent) => void (bytes += BSON.calculateObjectSize(event.reply as object));
  svc.database.client.on("commandSucceeded", onReply);
  try {
    return { commands: await commandsOf(svc.database.client, call), bytes };
  } finally {
    svc.database.client.off("commandSucceeded", onReply);
  }
}

describe("changes waiting behind an event backlog", () => {
  it("keep one entry a player in documents of bounded size, and a trends read's commands and bytes flat; answers exact", async () => {
    const { projectId, publicKey, privateKey } = await svc.createProject();
    const times = eventTimes(svc, 2);
    const days = times.map((time) => time.day);
    const events = players.flatMap((player, i) =>
      times.slice(i % 2).map(({ timestamp }) => ({ name: "play", partner_user_id: player, timestamp })),
    );
    const raw = events.map((e) => ({ name: e.name, player: e.partner_user_id, day: e.timestamp.slice(0, 10) }));
    const tagged = (set: "a" | "b") => ({
      players: players.map((partner_user_id) => ({ partner_user_id, tags: tagSet(set) })),
    });
    const trends = (tag: string) =>
      svc.postOk("/v1/events/trends", { from: days[0], to: days[1], tags: [tag] }, privateKey);
    await svc.postOk("/v1/players/update", tagged("a"), publicKey);
    await svc.postOk("/v1/events", { events }, publicKey);
    await waitFor(
      () => trends(tagSet("a")[0]),
      (body) => JSON.stringify([...byName(body)]) === JSON.stringify([...bruteForce(raw, days)]),
    );
    await ownerRoundsDone(svc);

    // The same database started again with its apply worker off: from now on every change waits behind the events.
    const first = svc;
    await first.service.close(1_000);
    await first.database.close();
    svc = await startTestService({ ...KEY_CACHE, EVENT_WORKER: "off", DB_NAME: first.config.dbName });

    const exact = async (set: "a" | "b") => {
      for (const tag of [tagSet("a")[0], tagSet("b")[0]]) {
        const want = tag.startsWith(set) ? bruteForce(raw, days) : bruteForce([], days);
        expect([...byName(await trends(tag))], tag).toEqual([...want]);
      }
    };
    const reserved = () => reservedSegments(svc);
    const waiting: { record: StoredChangedPlayers; read: { commands: string[]; bytes: number } }[] = [];
    let before = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      const set = round % 2 === 1 ? "b" : "a";
      if (round % 2 === 1) before = await reserved();
      await svc.postOk("/v1/players/update", tagged(set), publicKey);
      // The backlog grows too.
      await svc.postOk("/v1/events", { events: events.slice(0, 10) }, publicKey);
      await exact(set);
      if (round % 2 === 1) continue;
      await ownerMembershipWritten(svc);
      // Each round's resync is queued once its membership is written (the owner: behind the call), and the next read's
      // freshness reads the new segments' heads once: both before the counted read, which they would otherwise widen.
      // Two rounds since `before`, each an update's resync and a segment of events.
      await waitFor(reserved, (seq) => seq >= before + 4);
      await trends(tagSet("a")[0]);
      const read = await costOf(() => trends(tagSet("a")[0]));
      waiting.push({ record: await storedChangedPlayers(svc, projectId), read });
    }

    const [early, late] = [waiting[0], waiting.at(-1)!];
    expect.soft(late.record.keys).toEqual(players.map((player) => `u:${player}`).sort());
    expect.soft(late.record.sizes.length).toBeLessThanOrEqual(MAX_DOCUMENTS);
    expect.soft(Math.max(...late.record.sizes)).toBeLessThan(MAX_DOCUMENT_BYTES);
    expect.soft(sum(late.record.sizes)).toBeLessThanOrEqual(sum(early.record.sizes));
    expect.soft(late.read.commands).toEqual(early.read.commands);
    // What the read moves: a few numbers of the queue's state may widen, the record does not.
    expect.soft(late.read.bytes).toBeLessThanOrEqual(early.read.bytes + 512);
  });
});

describe("distinct new players changed behind an event backlog", () => {
  it("are bounded: past PLAYER_CHANGES_MAX an update answers 429 and writes nothing, until the resyncs are applied", async () => {
    const [MAX, PER_CALL, CALLS] = [60, 25, 8];
    const env = { ...KEY_CACHE, PLAYER_CHANGES_MAX: String(MAX) };
    let behind = await startTestService({ ...env, EVENT_WORKER: "off" });
    try {
      const { projectId, publicKey, privateKey } = await behind.createProject();
      // The backlog: events the worker has not applied.
      const backlog = eventTimes(behind, 1).map(({ timestamp }) => ({ name: "play", partner_user_id: "p", timestamp }));
      await behind.postOk("/v1/events", { events: backlog }, publicKey);
      const newPlayers = (call: number) => ({
        players: Array.from({ length: PER_CALL }, (_, i) => ({
          partner_user_id: `new-${call}-${i}-`.padEnd(256, "x"),
          tags: ["seen"],
        })),
      });
      const answers = [];
      for (let call = 0; call < CALLS; call++) {
        answers.push(await behind.postJson("/v1/players/update", newPlayers(call), publicKey));
        // A count read from the database (no owner's memory) stands a second: each call here reads it again.
        behind.clock.advance(1_001);
      }
      // Accepted while fewer than MAX wait (0, 25, 50), then refused whole.
      const accepted = Math.ceil(MAX / PER_CALL);
      expect(answers.map((answer) => answer.status)).toEqual([
        ...Array(accepted).fill(200),
        ...Array(CALLS - accepted).fill(429),
      ]);
      expect(answers[accepted].body).toEqual({
        code: "resource_exhausted",
        message:
          `players: ${accepted * PER_CALL} changed players of the project wait for the event queue ` +
          `(PLAYER_CHANGES_MAX ${MAX}); nothing was written, retry after 30 s`,
      });
      expect(answers[accepted].headers.get("retry-after")).toBe("30");
      const record = await storedChangedPlayers(behind, projectId);
      expect(record.keys).toHaveLength(accepted * PER_CALL);
      expect(Math.max(...record.sizes)).toBeLessThan(MAX_DOCUMENT_BYTES);
      const seen = async (service: TestService) =>
        (await service.postOk("/v1/players/search", { tags: ["seen"], page_size: 1 }, privateKey)).players_info.total;
      expect(await seen(behind)).toBe(accepted * PER_CALL);

      // The worker on again: the resyncs are applied, the record drains, and updates pass.
      await behind.service.close(1_000);
      await behind.database.close();
      behind = await startTestService({ ...env, DB_NAME: behind.config.dbName });
      await ownerRoundsDone(behind);
      await waitFor(
        () => storedChangedPlayers(behind, projectId),
        ({ keys }) => needsOwner(behind.database) || keys.length === 0,
        120_000,
      );
      behind.clock.advance(1_001);
      await behind.postOk("/v1/players/update", newPlayers(CALLS), publicKey);
      expect(await seen(behind)).toBe((accepted + 1) * PER_CALL);
    } finally {
      await behind.stop();
    }
  });
});
