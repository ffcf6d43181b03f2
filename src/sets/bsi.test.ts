import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Bitmap } from "./bitmap.js";
import { setValue, valueOf } from "./bsi.js";
import { totalIn } from "../events/reads/cohort-counts.js";

describe("bit-sliced columns", () => {
  it("keep each member's value, and total any set's values, as a map of numbers does", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 2 ** 40 })), { maxLength: 60 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 300 }), { maxLength: 40 }),
        (writes, cohort) => {
          const slices: Bitmap[] = [];
          const values = new Map<number, number>();
          for (const [member, value] of writes) {
            setValue(slices, member, value, () => new Bitmap());
            values.set(member, value);
          }
          for (const [member, value] of values) expect(valueOf(slices, member)).toBe(value);
          // No slice past the highest bit in use.
          expect(slices.at(-1)?.isEmpty ?? false).toBe(false);
          const within = new Bitmap(cohort);
          const expected = cohort.reduce((sum, member) => sum + (values.get(member) ?? 0), 0);
          expect(totalIn(slices, { members: within })).toBe(expected);
          const everyone = [...values.values()].reduce((sum, value) => sum + value, 0);
          expect(totalIn(slices, { allBut: within })).toBe(everyone - expected);
        },
      ),
    );
  });
});
