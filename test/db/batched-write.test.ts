import type { Collection, CommandStartedEvent, CommandSucceededEvent } from "mongodb";
import {
  batchedWrite,
  MAX_STATEMENTS_IN_FLIGHT,
  MAX_STATEMENTS_PER_COMMAND,
  STATEMENTS_PER_COMMAND,
  throwIfRefused,
} from "../../src/db/engine.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projectScopedId } from "../../src/db/ids.js";
import { WriteRefusedError } from "../../src/errors.js";
import { startTestService, type TestService } from "../support/service/service.js";

let svc: TestService;
/** The statements of each write command sent, by the collection it wrote. */
const statements: { collection: unknown; n: number }[] = [];
const count = (event: CommandStartedEvent) => {
  const list = event.command.updates ?? event.command.documents ?? event.command.deletes;
  if (Array.isArray(list)) statements.push({ collection: event.command[event.commandName], n: list.length });
};
const sizes = () => statements.map((s) => s.n);

beforeAll(async () => {
  svc = await startTestService();
  svc.database.client.on("commandStarted", count);
});
afterAll(async () => {
  svc.database.client.off("commandStarted", count);
  await svc.stop();
});

// FerretDB 1.24 deadlocks for good on a write command of 100 statements or more; a read after the write shows it did not.
describe("multi-statement writes stay under 100 statements a command", () => {
  it("splits 1,000 upserts into commands under 100 statements and the database still answers", async () => {
    statements.length = 0;
    const collection = svc.database.db.collection<{ _id: string; n: number }>("batched_write_probe");
    const failures = await batchedWrite(
      collection,
      Array.from({ length: 1_000 }, (_, n) => ({
        updateOne: { filter: { _id: `doc-${n}` }, update: { $set: { n } }, upsert: true },
      })),
    );
    expect(failures).toEqual([]);
    // Each upsert sent once, in 40 commands of 25.
    const probe = statements.filter((s) => s.collection === "batched_write_probe").map((s) => s.n);
    expect(probe).toEqual(Array.from({ length: 1_000 / STATEMENTS_PER_COMMAND }, () => STATEMENTS_PER_COMMAND));
    expect(await collection.countDocuments()).toBe(1_000);
    expect(await collection.findOne({ _id: "doc-999" })).toEqual({ _id: "doc-999", n: 999 });
  });

  it("the largest update call (100 new players, 50 new tags and 50 new traits each) writes in commands under 100", async () => {
    statements.length = 0;
    const { publicKey, privateKey } = await svc.createProject();
    const players = Array.from({ length: 100 }, (_, p) => ({
      partner_user_id: `big-${p}`,
      device_id: `big-device-${p}`,
      tags: Array.from({ length: 50 }, (_, t) => `tag_${(p * 5 + t) % 500}`),
      traits: Object.fromEntries(Array.from({ length: 50 }, (_, t) => [`key_${(p + t) % 200}`, t])),
    }));
    const res = await svc.postJson("/v1/players/update", { players }, publicKey);
    expect(res.status).toBe(200);
    expect(res.body.rejected).toEqual([]);
    expect(statements.length).toBeGreaterThan(0);
    expect(Math.max(...sizes())).toBeLessThanOrEqual(MAX_STATEMENTS_PER_COMMAND);
    expect(sizes().some((n) => n === STATEMENTS_PER_COMMAND)).toBe(true);

    const tags = await svc.postJson("/v1/players/tags", { page: 1, page_size: 100 }, privateKey);
    expect(tags.body.tags_info.total).toBe(500);
    const search = await svc.postJson("/v1/players/search", { tags: ["tag_0"], page_size: 100 }, privateKey);
    const expected = players.filter((p) => p.tags.includes("tag_0")).map((p) => p.partner_user_id);
    expect(search.body.players.map((p: any) => p.partner_user_id)).toEqual(expected.sort());
  });
});

describe("multi-statement writes side by side stay within the statements measured safe", () => {
  it("several large writes at once never have more than MAX_STATEMENTS_IN_FLIGHT statements in flight", async () => {
    const inFlight = new Map<number, number>();
    let most = 0;
    const started = (event: CommandStartedEvent) => {
      if (event.commandName !== "update" || event.command.update !== "batched_write_side_by_side") return;
      inFlight.set(event.requestId, event.command.updates.length);
      most = Math.max(
        most,
        [...inFlight.values()].reduce((sum, n) => sum + n, 0),
      );
    };
    const ended = (event: CommandSucceededEvent) => inFlight.delete(event.requestId);
    svc.database.client.on("commandStarted", started).on("commandSucceeded", ended).on("commandFailed", ended);
    try {
      const collection = svc.database.db.collection<{ _id: string; n: number }>("batched_write_side_by_side");
      const writer = (w: number) =>
        batchedWrite(
          collection,
          Array.from({ length: 300 }, (_, n) => ({
            updateOne: { filter: { _id: `w${w}-${n}` }, update: { $set: { n } }, upsert: true },
          })),
        );
      expect(await Promise.all([0, 1, 2, 3].map(writer))).toEqual([[], [], [], []]);
      expect(await collection.countDocuments()).toBe(1_200);
    } finally {
      svc.database.client.off("commandStarted", started).off("commandSucceeded", ended).off("commandFailed", ended);
    }
    // FerretDB 1.24 deadlocked for good with two commands of 50 statements side by side (see MAX_STATEMENTS_IN_FLIGHT in src/db/engine.ts).
    expect(most).toBeGreaterThan(STATEMENTS_PER_COMMAND);
    expect(most).toBeLessThanOrEqual(MAX_STATEMENTS_IN_FLIGHT);
    expect(most).toBeLessThan(2 * 50);
  });
});

describe("a statement the database refuses", () => {
  it("fails the write with a WriteRefusedError keeping what the database answered", async () => {
    const docs = svc.database.db.collection<{ _id: string; n: unknown }>("batched_write_refused");
    // A count that is not a number: the write's $inc on it is refused, statement by statement (the other holds).
    await docs.insertMany([
      { _id: projectScopedId("refused", "a"), n: 1 },
      { _id: projectScopedId("refused", "b"), n: "x" },
    ]);
    const failures = await batchedWrite(
      docs as unknown as Collection<{ _id: string; n: number }>,
      ["a", "b"].map((key) => ({
        updateOne: { filter: { _id: projectScopedId("refused", key) }, update: { $inc: { n: 1 } } },
      })),
    );
    const error: unknown = (() => {
      try {
        throwIfRefused("a count's write", failures);
      } catch (e) {
        return e;
      }
    })();
    if (!(error instanceof WriteRefusedError)) throw new Error(`expected a WriteRefusedError, got ${String(error)}`);
    expect(error.code).toBe("internal");
    expect(error.message).toMatch(/^a count's write refused by the database \(code \d+\)$/);
    expect(error.cause).toEqual([{ index: expect.any(Number), code: expect.any(Number) }]);
    expect((await docs.findOne({ _id: projectScopedId("refused", "a") }))?.n).toBe(2);
  });
});
