import { describe, expect, it } from "vitest";
import { fromMillionths, millionthsOf } from "./sums.js";

const of = (value: unknown) => millionthsOf(JSON.stringify({ amount: value }), "amount");

describe("millionthsOf", () => {
  it("counts numbers to the millionth, and nothing for a missing, non-number or out-of-range value", () => {
    expect([of(5), of(0.1), of(-2.5), of(19.99), of(0.0000004), of(0.0000006)]).toEqual([
      5_000_000, 100_000, -2_500_000, 19_990_000, 0, 1,
    ]);
    expect([of("7"), of(true), of(1e9), of(-1e9), millionthsOf(null, "amount"), millionthsOf("{}", "amount")]).toEqual([
      0, 0, 0, 0, 0, 0,
    ]);
  });

  it("adds decimals exactly, in any order", () => {
    const tenths = Array.from({ length: 10 }, () => of(0.1));
    expect(fromMillionths(tenths.reduce((a, b) => a + b, 0))).toBe(1);
    expect(fromMillionths(of(0.1) + of(0.2))).toBe(0.3);
    expect(fromMillionths(of(999_999_999.999999) + of(-0.000001))).toBe(999_999_999.999998);
  });
});
