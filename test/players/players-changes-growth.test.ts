import { BSON } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storedChangedPlayers } from "../support/db/changed-players.js";
import { startedDuring } from "../support/commands.js";
import { startTestService, type TestService } from "../support/service/service.js";

// The embedded engine only (vitest.config.ts EMBEDDED_ONLY): its owner writes the record of changed players in pages
// of its own; without the owner (MongoDB) the record is 16 shards written field by field.

/** Partner ids of one length, so that every entry weighs the same. */
const partnerId = (i: number) => `p${String(i).padStart(6, "0")}`;
const CALLS = 25;
const PER_CALL = 100;

let svc: TestService;
let projectId: string;
let publicKey: string;
beforeAll(async () => {
  // The apply worker off: no resync is applied, so every change recorded waits.
  svc = await startTestService({ EVENT_WORKER: "off" });
  ({ projectId, publicKey } = await svc.createProject());
});
afterAll(() => svc.stop());

/**
 * One call updating `players` (partner ids by number): its `update player_changes` commands, and the bytes FerretDB
 * rewrites for them (it replaces a whole document for any update: the size of each document they touch, after).
 */
async function changeOf(players: number[], tag = "t") {
  const body = { players: players.map((i) => ({ partner_user_id: partnerId(i), tags_add: [tag] })) };
  const started = await startedDuring(svc.database.client, () => svc.postOk("/v1/players/update", body, publicKey));
  const updates = started.filter(
    (event) => event.commandName === "update" && event.command.update === "player_changes",
  );
  const ids = updates.flatMap((event) =>
    event.command.updates.map((statement: { q: { _id: string } }) => statement.q._id),
  );
  const touched = await svc.database.db
    .collection<{ _id: string }>("player_changes")
    .find({ _id: { $in: ids } })
    .toArray();
  return {
    commands: updates.length,
    rewritten: touched.reduce((bytes, doc) => bytes + BSON.calculateObjectSize(doc), 0),
  };
}

const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

describe("what an update writes to the record of changed players", () => {
  it("does not grow with the players waiting for their resync: one command, the call's own entries", async () => {
    const first = await changeOf(range(0, PER_CALL));
    for (let call = 1; call < CALLS - 1; call++) await changeOf(range(call * PER_CALL, PER_CALL));
    const last = await changeOf(range((CALLS - 1) * PER_CALL, PER_CALL));
    // The players of the first call again, then one player of every call so far beside new ones.
    const again = await changeOf(range(0, PER_CALL), "u");
    const oneOfEach = range(0, CALLS).map((call) => call * PER_CALL + 1);
    const spread = await changeOf([...oneOfEach, ...range(CALLS * PER_CALL, PER_CALL - CALLS)], "v");

    const figures = JSON.stringify({ first, last, again, spread });
    for (const change of [first, last, again, spread]) expect(change.commands, figures).toBe(1);
    // A page of the call's 100 entries (~10 KB), whatever the 2,500 waiting; blanks of free pages are a few bytes.
    for (const change of [last, again, spread])
      expect(change.rewritten, figures).toBeLessThanOrEqual(first.rewritten + 1_024);

    const record = await storedChangedPlayers(svc, projectId);
    const waiting = range(0, CALLS * PER_CALL + PER_CALL - CALLS).map((i) => `u:${partnerId(i)}`);
    // Every waiting player is in the record; a page keeps a superseded entry until it is rewritten or blanked.
    expect(new Set(record.keys)).toEqual(new Set(waiting));
  });
});
