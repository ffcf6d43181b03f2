import { describe, expect, it } from "vitest";
import {
  compareMeans,
  compareShares,
  normalTwoSided,
  sampleRatioPValue,
  studentQuantile975,
  type GroupTotals,
} from "./statistics.js";

// The expected numbers are the textbook formulas on fixed data, computed once with SciPy 1.17.1 and statsmodels
// (stats.norm, stats.t.ppf, stats.ttest_ind(equal_var=False).confidence_interval, stats.chisquare,
// proportions_ztest and confint_proportions_2indep(method="wald")) and written down here.

const totalsOf = (values: readonly number[]): GroupTotals => ({
  n: values.length,
  total: values.reduce((sum, x) => sum + x, 0),
  squares: values.reduce((sum, x) => sum + x * x, 0),
});

describe("experiment statistics", () => {
  it("gives the distributions' textbook values", () => {
    expect(normalTwoSided(2.5)).toBeCloseTo(0.012419330651552265, 12);
    expect(normalTwoSided(0.1)).toBeCloseTo(0.920344325445942, 12);
    expect(studentQuantile975(10)).toBeCloseTo(2.228138851986274, 10);
    expect(studentQuantile975(3.7)).toBeCloseTo(2.8675207071911895, 10);
  });

  it("compares two shares: Wald interval, pooled two-proportion z-test", () => {
    const result = compareShares({ n: 1000, total: 200, squares: 200 }, { n: 1000, total: 245, squares: 245 })!;
    expect(result.difference).toBeCloseTo(0.045, 12);
    expect(result.ciLow).toBeCloseTo(0.008596603775623386, 12);
    expect(result.ciHigh).toBeCloseTo(0.08140339622437659, 12);
    expect(result.pValue).toBeCloseTo(0.015552175733206686, 12);
  });

  it("compares two means by Welch's t", () => {
    const control = totalsOf([0, 0, 3.5, 1, 2, 0, 7, 0.25, 0, 4]);
    const variant = totalsOf([1, 0, 5, 2.5, 0, 6, 8, 0, 3, 2, 1.5, 0]);
    const result = compareMeans(control, variant)!;
    expect(result.difference).toBeCloseTo(0.6416666666666666, 12);
    expect(result.ciLow).toBeCloseTo(-1.5972049707872555, 9);
    expect(result.ciHigh).toBeCloseTo(2.8805383041205888, 9);
    expect(result.pValue).toBeCloseTo(0.5565327037659339, 10);
  });

  it("gives no interval where the data cannot: no player, no spread, one player", () => {
    expect(compareShares({ n: 0, total: 0, squares: 0 }, { n: 5, total: 1, squares: 1 })).toBeUndefined();
    expect(compareShares({ n: 5, total: 0, squares: 0 }, { n: 5, total: 0, squares: 0 })).toEqual({ difference: 0 });
    expect(compareMeans(totalsOf([1]), totalsOf([2, 3]))).toEqual({ difference: 1.5 });
    expect(compareMeans(totalsOf([1, 1]), totalsOf([2, 2]))).toEqual({ difference: 1 });
  });

  it("tests a split against its weights by chi-square, and fires on a skewed one", () => {
    expect(sampleRatioPValue([5200, 4800], [1, 1])).toBeCloseTo(6.334248366623988e-5, 15);
    expect(sampleRatioPValue([340, 330, 330], [1, 1, 1])).toBeCloseTo(0.9048374180359595, 12);
    expect(sampleRatioPValue([260, 240, 500], [1, 1, 2])).toBeCloseTo(0.6703200460356394, 12);
    expect(sampleRatioPValue([600, 400], [0.5, 0.5])).toBeCloseTo(2.5396285894708634e-10, 18);
    expect(sampleRatioPValue([600, 400], [0.5, 0.5])).toBeLessThan(0.001);
    expect(sampleRatioPValue([0, 0], [1, 1])).toBe(1);
  });
});
