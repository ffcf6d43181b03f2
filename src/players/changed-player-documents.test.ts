import { describe, expect, it } from "vitest";
import {
  type ChangedPlayer,
  cleanStopWrite,
  leave,
  type PageWrite,
  pageWrite,
  type RecordDoc,
  recordOf,
  type RememberedProject,
} from "./changed-player-documents.js";

/** The documents a write leaves, its statements applied in `order` (a crash: only some of them). */
function applied(db: Map<string, RecordDoc>, { statements }: PageWrite, order: number[]) {
  for (const i of order) {
    const { filter, update } = (statements[i] as { updateOne: { filter: { _id: string }; update: any } }).updateOne;
    const doc = db.get(filter._id) ?? { _id: filter._id };
    if (update.$set) db.set(filter._id, { ...doc, ...update.$set });
    for (const path of Object.keys(update.$unset ?? {})) delete doc.p?.[path.slice(2)];
  }
}

/** A seeded generator, so a failure repeats. */
function random(seed: number) {
  return () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

describe("the owner's pages of the record of changed players", () => {
  it("keep every waiting player's latest entry and its round's tags stored, whatever statements of a write land", () => {
    const next = random(7);
    const project: RememberedProject = recordOf([]);
    const db = new Map<string, RecordDoc>();
    const roundTags = new Map<string, string[]>();
    for (let round = 0; round < 400; round++) {
      const stamp = `s${String(round).padStart(4, "0")}`;
      const keys = [
        ...new Set(Array.from({ length: 1 + Math.floor(next() * 6) }, () => `u:${Math.floor(next() * 30)}`)),
      ];
      const tags = [`t${round % 11}`];
      roundTags.set(stamp, tags);
      const players: ChangedPlayer[] = keys.map((identityKey) => ({
        identityKey,
        into: null,
        stamp,
        at: new Date(Date.now() - 3_600_000 + round),
        erasedAt: null,
      }));
      const write = pageWrite("p", project, players, tags);
      expect(write.statements.length).toBeLessThanOrEqual(9);
      // A crash mid-write: any subset of its statements in any order, then what a start reads.
      const crashed = new Map([...db].map(([id, doc]) => [id, structuredClone(doc)]));
      const some = write.statements.map((_, i) => i).filter(() => next() < 0.5);
      applied(
        crashed,
        write,
        some.sort(() => next() - 0.5),
      );
      const afterCrash = recordOf([...crashed.values()]);
      for (const [key, entry] of project.entries) {
        const stored = afterCrash.entries.get(key);
        expect([entry.stamp, stamp]).toContain(stored?.stamp);
        for (const tag of roundTags.get(entry.stamp)!) expect(afterCrash.moved).toContain(tag);
      }
      applied(
        db,
        write,
        write.statements.map((_, i) => i),
      );
      write.apply();
      // Some resyncs applied: their entries settle in memory.
      for (const [key, entry] of [...project.entries]) {
        if (next() < 0.3) {
          project.entries.delete(key);
          leave(project, key);
          expect(entry.stamp).toBeTruthy();
        }
      }
      const stored = recordOf([...db.values()]);
      for (const [key, entry] of project.entries) expect(stored.entries.get(key)?.stamp).toBe(entry.stamp);
      // Pages: at most those with a live entry, and a few free ones.
      expect(db.size).toBeLessThanOrEqual(project.entries.size + 9);
    }
    const stop = cleanStopWrite(project);
    applied(
      db,
      stop,
      stop.statements.map((_, i) => i),
    );
    stop.apply();
    const left = recordOf([...db.values()]);
    expect(new Set(left.entries.keys())).toEqual(new Set(project.entries.keys()));
  });

  it("reads a player stored twice as its latest entry, with the latest erasure mark of either", () => {
    const at = (ms: number) => new Date(ms);
    const record = recordOf([
      { _id: "p/3", p: { a: { k: "u:x", s: "old", a: at(1), e: 4 } }, t: { h: "red" } },
      { _id: "p/r0", p: { a: { k: "u:x", s: "new", a: at(2), i: "u:y" } }, t: { g: "blue" } },
    ]);
    expect(record.entries.get("u:x")).toEqual({
      identityKey: "u:x",
      into: "u:y",
      stamp: "new",
      at: at(2),
      erasedAt: 4,
    });
    expect(record.placed.get("u:x")).toBe("p/r0");
    expect([...record.moved].sort()).toEqual(["blue", "red"]);
    expect(record.nextPage).toBe(1);
  });
});
