import { describe, expect, it } from "vitest";
import { WriteBehind } from "./owner-memory.js";

/** Entries that count changes of a document: merged by adding, refused past 9 (one write cannot say more). */
const counts = () =>
  new WriteBehind<{ id: string; n: number }>({
    idOf: (entry) => entry.id,
    merge: (earlier, later) => (earlier.n + later.n > 9 ? null : { id: earlier.id, n: earlier.n + later.n }),
  });

describe("WriteBehind", () => {
  it("merges a document's entries in its first place, keeping when its first unwritten change came", () => {
    const behind = counts();
    behind.add([{ id: "p/a", n: 1 }], 1_000);
    behind.add([{ id: "q/b", n: 1 }], 2_000);
    expect(behind.add([{ id: "p/a", n: 2 }], 3_000)).toBe(true);
    expect(behind.entries()).toEqual([
      { entry: { id: "p/a", n: 3 }, at: 1_000 },
      { entry: { id: "q/b", n: 1 }, at: 2_000 },
    ]);
    expect([behind.size, behind.waits("p"), behind.waits("r")]).toEqual([2, true, false]);
    expect(
      behind.add(
        [
          { id: "q/b", n: 1 },
          { id: "p/a", n: 9 },
        ],
        4_000,
      ),
    ).toBe(false);
    expect(behind.entries().map(({ entry }) => entry.n)).toEqual([3, 1]);
  });

  it("keeps a document changed while its write was in flight, and lets go of the others", () => {
    const behind = counts();
    behind.add(
      [
        { id: "p/a", n: 1 },
        { id: "p/b", n: 1 },
      ],
      1_000,
    );
    const writing = behind.entries({ among: (projectId) => projectId === "p" });
    behind.add([{ id: "p/a", n: 1 }], 2_000);
    behind.written(writing);
    expect(behind.entries()).toEqual([{ entry: { id: "p/a", n: 2 }, at: 1_000 }]);
    expect(behind.waits("p")).toBe(true);
  });

  it("reads one project's entries from its own list, oldest first", () => {
    const behind = counts();
    behind.add(
      [
        { id: "p/a", n: 1 },
        { id: "q/a", n: 1 },
        { id: "p/b", n: 1 },
      ],
      1_000,
    );
    behind.add([{ id: "p/a", n: 1 }], 2_000);
    expect(behind.entries({ project: "p" }).map(({ entry }) => entry)).toEqual([
      { id: "p/a", n: 2 },
      { id: "p/b", n: 1 },
    ]);
    behind.written(behind.entries({ project: "p", limit: 1 }));
    expect(behind.entries({ project: "p" }).map(({ entry }) => entry.id)).toEqual(["p/b"]);
    expect(behind.entries({ project: "r" })).toEqual([]);
  });

  it("takes what it answers, so changes made during the write wait for the next one", () => {
    const behind = counts();
    behind.add([{ id: "p/a", n: 1 }], 1_000);
    expect(behind.take()).toEqual([{ entry: { id: "p/a", n: 1 }, at: 1_000 }]);
    expect([behind.size, behind.waits("p"), behind.oldest]).toEqual([0, false, undefined]);
    behind.add([{ id: "p/a", n: 4 }], 2_000);
    expect(behind.oldest).toEqual({ entry: { id: "p/a", n: 4 }, at: 2_000 });
  });
});
