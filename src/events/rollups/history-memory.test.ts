import { describe, expect, it } from "vitest";
import { OwnerMemory } from "../../db/owner-memory.js";
import type { DocumentChange } from "../apply/absorb.js";
import { HistoryMemory, type FoundHistory } from "./history-memory.js";
import { dayNumber } from "../kpis/periods.js";

const history = (key: string, events: number): FoundHistory => ({
  id: `p1/${key}`,
  rollup: {
    identityKey: key,
    days: { "2026-01-01": { n_play: events } },
    sums: {},
    cohorts: [],
    foldedInto: null,
    hw: 3,
  },
  hw: 3,
});
const firstEvent = (key: string): DocumentChange => ({
  id: `p1/${key}`,
  inc: { "days.2026-01-02.n_play": 1 },
  init: { project_id: "p1", identity_key: key },
});

describe("HistoryMemory", () => {
  it("knows, once a project is filled whole, that a player it does not hold has no history", async () => {
    const memory = new HistoryMemory(new OwnerMemory(1_000_000));
    expect(memory.get("p1", "p1/u:new")).toBeUndefined();
    await memory.fill("p1", async () => [history("u:a", 2)]);
    expect(memory.get("p1", "p1/u:a")?.days).toEqual({ "2026-01-01": { n_play: 2 } });
    expect(memory.get("p1", "p1/u:new")).toBeNull();
    expect(memory.get("p2", "p2/u:new")).toBeUndefined();
  });

  it("starts a new player's history where the worker writes one, so the project stays whole", async () => {
    const memory = new HistoryMemory(new OwnerMemory(1_000_000));
    await memory.fill("p1", async () => []);
    memory.absorbed(4, [firstEvent("u:new")]);
    expect(memory.get("p1", "p1/u:new")).toMatchObject({
      identityKey: "u:new",
      hw: 4,
      days: { "2026-01-02": { n_play: 1 } },
    });
  });

  it("is no longer whole after a write that failed, or when a write came during the fill's scan", async () => {
    const memory = new HistoryMemory(new OwnerMemory(1_000_000));
    await memory.fill("p1", async () => [history("u:a", 2)]);
    memory.forget([firstEvent("u:new")]);
    expect(memory.get("p1", "p1/u:new")).toBeUndefined();

    await memory.fill("p1", async () => {
      memory.absorbed(5, [firstEvent("u:b")]);
      return [];
    });
    expect(memory.get("p1", "p1/u:other")).toBeUndefined();
  });

  it("is not whole when the project does not fit its budget, and does not scan again until it would", async () => {
    const memory = new HistoryMemory(new OwnerMemory(500));
    let scans = 0;
    const scan = async () => (scans++, [history("u:a", 2), history("u:b", 3)]);
    await memory.fill("p1", scan);
    await memory.fill("p1", scan);
    expect(memory.get("p1", "p1/u:new")).toBeUndefined();
    expect(scans).toBe(1);
  });

  it("keeps each history's days ascending through a late event, a fold's move and a new fill", async () => {
    const memory = new HistoryMemory(new OwnerMemory(1_000_000));
    const daysOf = (key: string) => Array.from(memory.slotted("p1", null)!.players.get(key)!.days);
    await memory.fill("p1", async () => [history("u:a", 2)]);
    const late: DocumentChange = {
      id: "p1/u:a",
      inc: { "days.2025-12-30.n_play": 1, "days.2026-01-03.n_win": 2, "days.2026-01-03.n_play": 1 },
      init: {},
    };
    memory.absorbed(4, [late, firstEvent("u:b")]);
    expect(daysOf("u:a")).toEqual([dayNumber("2025-12-30"), dayNumber("2026-01-01"), dayNumber("2026-01-03")]);
    expect(daysOf("u:b")).toEqual([dayNumber("2026-01-02")]);
    // The worker moves a folded device's days to its player: its history keeps no day.
    const fold: DocumentChange = {
      id: "p1/u:b",
      inc: {},
      unset: ["days", "sums"],
      set: { folded_into: "u:a" },
      init: {},
    };
    memory.absorbed(5, [fold, { id: "p1/u:a", inc: { "days.2026-01-02.n_play": 1 }, init: {} }]);
    expect(daysOf("u:b")).toEqual([]);
    expect(daysOf("u:a")).toHaveLength(4);

    const restarted = new HistoryMemory(new OwnerMemory(1_000_000));
    await restarted.fill("p1", async () => [
      {
        ...history("u:a", 2),
        rollup: { ...history("u:a", 2).rollup, days: { "2026-01-05": { n_play: 1 }, "2026-01-01": { n_play: 1 } } },
      },
    ]);
    expect(Array.from(restarted.slotted("p1", null)!.players.get("u:a")!.days)).toEqual([
      dayNumber("2026-01-01"),
      dayNumber("2026-01-05"),
    ]);
  });
});
