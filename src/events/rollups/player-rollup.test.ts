import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { DocumentChange } from "../apply/absorb.js";
import { mergeChanges, waitingHistories } from "./player-rollup.js";

type Doc = Record<string, unknown>;

/** An update applied as the database applies `$unset`, `$inc` and `$set` to a history (paths of at most 3 parts). */
function applyChange(doc: Doc, change: DocumentChange): Doc {
  const next = structuredClone(doc);
  const parent = (path: string, create: boolean) => {
    const parts = path.split(".");
    let at = next;
    for (const part of parts.slice(0, -1)) {
      if (at[part] === undefined && create) at[part] = {};
      at = at[part] as Doc;
      if (at === undefined) return undefined;
    }
    return { at, last: parts.at(-1)! };
  };
  for (const path of change.unset ?? []) {
    const found = parent(path, false);
    if (found) delete found.at[found.last];
  }
  for (const [path, by] of Object.entries(change.inc)) {
    const { at, last } = parent(path, true)!;
    at[last] = ((at[last] as number | undefined) ?? 0) + Number(by);
  }
  Object.assign(next, change.set);
  return next;
}

/** A history read as the store reads it: an emptied object (no day, no name left) is the same as none. */
function withoutEmpty(doc: Doc): Doc {
  const kept: Doc = {};
  for (const [key, value] of Object.entries(doc)) {
    const inner =
      value !== null && typeof value === "object" && !Array.isArray(value) ? withoutEmpty(value as Doc) : value;
    if (!(inner !== null && typeof inner === "object" && !Array.isArray(inner) && Object.keys(inner).length === 0))
      kept[key] = inner;
  }
  return kept;
}

const days = ["2026-01-01", "2026-01-02"];
const change = fc.record({
  inc: fc.dictionary(
    fc.constantFrom(...days.flatMap((day) => [`days.${day}.n_a`, `days.${day}.n_b`])),
    fc.integer({ min: 1, max: 5 }),
  ),
  set: fc.record({ cohorts: fc.array(fc.constantFrom("t/a", "t/b"), { maxLength: 2 }) }, { requiredKeys: [] }),
  unset: fc.subarray(["days", ...days.map((day) => `days.${day}`)], { maxLength: 1 }),
});

describe("mergeChanges", () => {
  it("is the two changes applied in turn, or null when one update cannot say it", () => {
    fc.assert(
      fc.property(change, change, (a, b) => {
        const earlier = { id: "p/u:a", init: {}, ...a };
        const later = { id: "p/u:a", init: {}, ...b };
        const merged = mergeChanges(earlier, later);
        const start: Doc = { days: { "2026-01-01": { n_a: 1 } }, cohorts: [] };
        if (merged === null) {
          // Only when the later change adds under a field the earlier one removes.
          expect(Object.keys(b.inc).some((path) => a.unset.some((field) => path.startsWith(`${field}.`)))).toBe(true);
          return;
        }
        expect(withoutEmpty(applyChange(start, merged))).toEqual(
          withoutEmpty(applyChange(applyChange(start, earlier), later)),
        );
      }),
    );
  });
});

describe("waitingHistories", () => {
  const event = (key: string, day: string): DocumentChange => ({
    id: `p/${key}`,
    inc: { [`days.${day}.n_a`]: 1 },
    init: { project_id: "p", identity_key: key },
  });
  const segment = (seq: number, changes: DocumentChange[]) => changes.map((change) => ({ seq, first: seq, change }));

  it("keeps one change a document, with the last segment merged into it, and the first segment waiting", () => {
    const behind = waitingHistories();
    expect(behind.add(segment(4, [event("u:a", days[0]), event("u:b", days[0])]), 1_000)).toBe(true);
    expect(behind.add(segment(5, [event("u:a", days[0])]), 2_000)).toBe(true);
    expect(behind.oldest?.entry.first).toBe(4);
    expect(behind.entries()).toEqual([
      {
        at: 1_000,
        entry: {
          seq: 5,
          first: 4,
          change: { ...event("u:a", days[0]), inc: { [`days.${days[0]}.n_a`]: 2 }, set: {}, unset: [] },
        },
      },
      { at: 1_000, entry: { seq: 4, first: 4, change: event("u:b", days[0]) } },
    ]);
    behind.add(segment(6, [{ ...event("u:c", days[0]), id: "q/u:c" }]), 3_000);
    behind.written(behind.entries({ among: (projectId) => projectId === "p" }));
    expect([behind.size, behind.oldest?.entry.first, behind.oldest?.at]).toEqual([1, 6, 3_000]);
  });

  it("selects the oldest first: those added before a time, up to a number", () => {
    const behind = waitingHistories();
    behind.add(segment(1, [event("u:a", days[0])]), 1_000);
    behind.add(segment(2, [event("u:b", days[0]), event("u:c", days[0])]), 2_000);
    behind.add(segment(3, [event("u:a", days[1]), event("u:d", days[0])]), 3_000);
    const ids = (entries: { entry: { change: DocumentChange } }[]) => entries.map(({ entry }) => entry.change.id);
    expect(ids(behind.entries({ addedBefore: 2_500 }))).toEqual(["p/u:a", "p/u:b", "p/u:c"]);
    expect(ids(behind.entries({ addedBefore: 2_500, limit: 2 }))).toEqual(["p/u:a", "p/u:b"]);
  });

  it("refuses, adding nothing, a segment with a change the pending one cannot take", () => {
    const behind = waitingHistories();
    behind.add(segment(4, [{ ...event("u:a", days[0]), inc: {}, unset: ["days"] }]), 1_000);
    expect(behind.add(segment(5, [event("u:b", days[0]), event("u:a", days[1])]), 2_000)).toBe(false);
    expect(behind.entries().map(({ entry }) => entry.change.id)).toEqual(["p/u:a"]);
  });
});
