import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { MembershipWriteBehind } from "./membership-write-behind.js";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A write-behind whose writes are recorded, and fail while `failing` is set. */
function recorded() {
  const writes: { projectId: string; ids: string[] }[] = [];
  const state = { failing: false };
  const behind = new MembershipWriteBehind({
    write: async (projectId, ids) => {
      if (state.failing) throw new Error("the database went away");
      writes.push({ projectId, ids: [...ids].sort() });
    },
  });
  return { behind, writes, state };
}

describe("MembershipWriteBehind", () => {
  it("writes a project's changes together once they stop coming, and tells a waiter when they are written", async () => {
    const { behind, writes } = recorded();
    behind.changed("p1", ["p1/a/0"]);
    behind.changed("p1", ["p1/b/3", "p1/a/0", "p1/_counts"]);
    behind.changed("p2", ["p2/a/1"]);
    let written = false;
    void behind.written("p1").then(() => (written = true));
    expect(behind.waiting).toBe(4);

    await vi.advanceTimersByTimeAsync(900);
    expect(writes).toEqual([]);
    await vi.advanceTimersByTimeAsync(200);
    expect(writes).toEqual([
      { projectId: "p1", ids: ["p1/_counts", "p1/a/0", "p1/b/3"] },
      { projectId: "p2", ids: ["p2/a/1"] },
    ]);
    expect(written).toBe(true);
    expect(behind.waiting).toBe(0);
    await expect(behind.written("p1")).resolves.toBeUndefined();
  });

  it("writes within 5 s while changes keep coming", async () => {
    const { behind, writes } = recorded();
    for (let step = 0; step < 9; step++) {
      behind.changed("p1", [`p1/a/${step % 8}`]);
      await vi.advanceTimersByTimeAsync(500);
    }
    expect(writes).toEqual([]);
    behind.changed("p1", ["p1/b/0"]);
    await vi.advanceTimersByTimeAsync(500);
    expect(writes).toHaveLength(1);
    expect(writes[0].ids).toHaveLength(9);
  });

  it("keeps what a failed write held and tries again, the waiters waiting until it is written", async () => {
    const { behind, writes, state } = recorded();
    state.failing = true;
    behind.changed("p1", ["p1/a/0", "p1/_counts"]);
    let written = false;
    void behind.written("p1").then(() => (written = true));
    await vi.advanceTimersByTimeAsync(1_100);
    expect(written).toBe(false);
    expect(behind.waiting).toBe(2);

    state.failing = false;
    behind.changed("p1", ["p1/b/0"]);
    // The retry waits out its backoff (0.5 s after the failure), not the quiet after the new change.
    await vi.advanceTimersByTimeAsync(200);
    expect(writes).toEqual([]);
    await vi.advanceTimersByTimeAsync(300);
    expect(writes).toEqual([{ projectId: "p1", ids: ["p1/_counts", "p1/a/0", "p1/b/0"] }]);
    expect(written).toBe(true);
  });

  it("writes everything at once on writeAll (a clean stop)", async () => {
    const { behind, writes } = recorded();
    behind.changed("p1", ["p1/a/0"]);
    behind.changed("p2", ["p2/_counts"]);
    await behind.writeAll();
    expect(writes).toEqual([
      { projectId: "p1", ids: ["p1/a/0"] },
      { projectId: "p2", ids: ["p2/_counts"] },
    ]);
  });
});
