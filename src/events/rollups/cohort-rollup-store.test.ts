import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { countsChange, unpackCounts } from "./cohort-rollup-store.js";

const state = fc.record({ e: fc.integer({ min: 0, max: 2 ** 32 - 1 }), p: fc.integer({ min: 0, max: 2 ** 31 - 1 }) });

describe("packed cohort counts", () => {
  it("a stored Int64 summed from the packed changes of any real states unpacks to the last state", () => {
    fc.assert(
      fc.property(fc.array(state, { minLength: 1, maxLength: 20 }), (states) => {
        let stored = 0n;
        let before = { e: 0, p: 0 };
        for (const next of states) {
          // What $inc adds: the change of both counts, either of which may be negative (a history moved out).
          stored += countsChange(next.e - before.e, next.p - before.p).toBigInt();
          expect(unpackCounts(stored)).toEqual(next);
          before = next;
        }
      }),
      { numRuns: 2_000 },
    );
  });
});
