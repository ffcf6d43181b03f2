import { describe, expect, it } from "vitest";
import { systemClock } from "../../../src/clock.js";
import type { Database } from "../../../src/db/database.js";
import { engineOf } from "../../../src/db/engine.js";
import { Resyncs } from "../../../src/events/apply/resyncs.js";
import { QueueStateStore, QueueWriter } from "../../../src/events/queue/queue.js";
import { SegmentStore } from "../../../src/events/queue/segment-store.js";
import { ChangedPlayers } from "../../../src/players/changed-players.js";
import { scratchDatabase } from "../../support/db/scratch-database.js";

// The repair of the record of changed players (Resyncs.repairIfDue): a change recorded before a round whose resync
// was lost (the process stopped between the round's writes and the queuing) is queued again by the worker.
const databases = { on: scratchDatabase("resync_repair_memory"), off: scratchDatabase("resync_repair") };
const MINUTE = 60_000;

async function repairOn(database: Database, ownerMemoryBytes: number) {
  const changes = new ChangedPlayers(database.db, engineOf(database, ownerMemoryBytes));
  const queue = new QueueStateStore(database.db);
  await queue.ensure();
  const segments = new SegmentStore(database.db);
  const resyncs = new Resyncs({ writer: new QueueWriter({ queue, segments, clock: systemClock }) });
  // Of the two folds recorded, only d:made's round wrote its tombstone.
  const directory = {
    foldTargets: async (_projectId: string, keys: readonly string[]) =>
      new Map(keys.filter((key) => key === "d:made").map((key) => [key, "u:bea"])),
  };
  let seen = 0;
  /** What the repair at `at` queued since the last look. */
  const repairAt = async (at: Date) => {
    await resyncs.repairIfDue(at, { changes, directory });
    const { reserved } = await queue.read();
    const queued = [];
    for (let seq = seen + 1; seq <= reserved; seq++) queued.push(await segments.find(seq));
    seen = reserved;
    return queued.map((segment) => ({ projectId: segment!.projectId, work: segment!.work }));
  };
  return { changes, repairAt };
}

describe("the repair of changes never settled", () => {
  for (const memory of ["on", "off"] as const) {
    it(`queues each again under a new stamp once past its grace, a fold only where it was made, until settled (owner's memory ${memory})`, async () => {
      const { changes, repairAt } = await repairOn(databases[memory](), memory === "on" ? 64 * 2 ** 20 : 0);
      const base = Date.now() - 60 * MINUTE;
      const at = (minutes: number) => new Date(base + minutes * MINUTE);
      const lost = await changes.record(
        "prj",
        {
          identityKeys: ["u:ann"],
          folds: [
            { from: "d:made", into: "u:bea" },
            { from: "d:failed", into: "u:cat" },
          ],
          tags: ["gold"],
        },
        at(0),
      );
      const settled = await changes.record("prj", { identityKeys: ["u:eve"], folds: [], tags: [] }, at(0));
      await changes.settle("prj", settled, ["u:eve"]);
      await changes.record("prj", { identityKeys: ["u:dan"], folds: [], tags: [] }, at(9.6));

      // At 10 minutes: ann and both folds are past the 5-minute grace; dan is not; eve was settled.
      const [again, ...more] = await repairAt(at(10));
      expect(more).toEqual([]);
      expect(again.projectId).toBe("prj");
      expect(again.work).toMatchObject({
        kind: "resync",
        identityKeys: ["u:ann", "d:failed"],
        folds: [{ from: "d:made", into: "u:bea" }],
      });
      const stamp = (again.work as { change: string }).change;
      expect(stamp).not.toBe(lost);
      const waiting = new Map((await changes.waiting("prj")).map((player) => [player.identityKey, player.stamp]));
      expect(Object.fromEntries(waiting)).toMatchObject({ "u:ann": stamp, "d:made": stamp, "d:failed": stamp });

      // Once a minute at most: at 14.5 nothing is past its grace; at 15 dan is, but the last repair ran 30 s before;
      // at 15.5 dan, and the players queued at 10 (their new stamps past the grace again), all in one segment.
      expect(await repairAt(at(14.5))).toEqual([]);
      expect(await repairAt(at(15))).toEqual([]);
      const [third, ...rest] = await repairAt(at(15.5));
      expect(rest).toEqual([]);
      const work = third.work as { identityKeys: string[]; folds: object[] };
      expect([...work.identityKeys].sort()).toEqual(["d:failed", "u:ann", "u:dan"]);
      expect(work.folds).toEqual([{ from: "d:made", into: "u:bea" }]);

      // Settled by the resync that carries the latest stamp: nothing is queued again.
      const latest = new Map((await changes.waiting("prj")).map((player) => [player.identityKey, player.stamp]));
      for (const stampOf of new Set(latest.values())) {
        await changes.settle(
          "prj",
          stampOf,
          [...latest].filter(([, s]) => s === stampOf).map(([key]) => key),
        );
      }
      expect(await repairAt(at(30))).toEqual([]);
    });
  }
});
