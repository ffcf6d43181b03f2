import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { HistorySlots } from "../rollups/player-rollup.js";
import { ActivityColumns } from "./activity-columns.js";

describe("ActivityColumns", () => {
  const history = (days: number[], seed: number): HistorySlots => ({
    days: Int32Array.from(days).sort(),
    slots: Int32Array.from({ length: 2 * days.length }, (_, i) => seed * 3 + i),
    counts: Int32Array.from({ length: 2 * days.length }, (_, i) => seed + 2 * i),
    ordinal: -1,
  });
  /** A range's days, its runs spelled out, with its slots and counts. */
  const read = (arrays: ActivityColumns["current"], range: Int32Array) => ({
    days: Array.from({ length: (range[1] - range[0]) / 2 }, (_, i) => {
      const [first, last] = arrays.runs.subarray(range[0] + 2 * i, range[0] + 2 * i + 2);
      return Array.from({ length: last - first + 1 }, (_, k) => first + k);
    }).flat(),
    slots: Array.from(arrays.slots.subarray(range[2], range[3])),
    counts: Array.from(arrays.counts.subarray(range[2], range[3])),
  });
  const plain = (one: HistorySlots) => ({
    days: Array.from(one.days),
    slots: Array.from(one.slots),
    counts: Array.from(one.counts),
  });

  it("hold each ordinal's history through replacements, drops, loose appends and compactions, and keep what a read took", () => {
    const days = fc.uniqueArray(fc.integer({ min: 20_000, max: 20_060 }), { maxLength: 40 });
    const step = fc.oneof(
      fc.record({ kind: fc.constant("set" as const), ordinal: fc.nat(30), days, seed: fc.nat(1000) }),
      fc.record({ kind: fc.constant("drop" as const), ordinal: fc.nat(30) }),
      fc.record({ kind: fc.constant("loose" as const), days, seed: fc.nat(1000) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 80 }), (steps) => {
        const columns = new ActivityColumns(8);
        const byOrdinal: (HistorySlots | undefined)[] = [];
        const taken: { arrays: ActivityColumns["current"]; range: Int32Array; expected: ReturnType<typeof plain> }[] =
          [];
        for (const one of steps) {
          if (one.kind === "set") byOrdinal[one.ordinal] = history(one.days, one.seed);
          else if (one.kind === "drop") byOrdinal[one.ordinal] = undefined;
          columns.sync(byOrdinal);
          if (one.kind === "loose") {
            const loose = history(one.days, one.seed);
            const { runAt, runEnd, slotAt, slotEnd } = columns.appendLoose(loose);
            taken.push({
              arrays: columns.current,
              range: Int32Array.of(runAt, runEnd, slotAt, slotEnd),
              expected: plain(loose),
            });
          }
          byOrdinal.forEach((known, ordinal) => {
            expect(columns.has(ordinal)).toBe(known !== undefined);
            if (!known) return;
            const range = new Int32Array(4);
            columns.copyRange(ordinal, range, 0);
            expect(read(columns.current, range)).toEqual(plain(known));
            taken.push({ arrays: columns.current, range, expected: plain(known) });
          });
          for (const { arrays, range, expected } of taken) expect(read(arrays, range)).toEqual(expected);
        }
      }),
      { numRuns: 200 },
    );
  });
});
