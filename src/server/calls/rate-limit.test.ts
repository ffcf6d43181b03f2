import { describe, expect, it } from "vitest";
import { TokenBuckets } from "./rate-limit.js";

function buckets(perSecond: number, burst: number) {
  let ms = 1_000_000;
  const limit = new TokenBuckets({ perSecond, burst, clock: { now: () => new Date(ms) } });
  return { limit, advance: (by: number) => (ms += by) };
}

describe("TokenBuckets", () => {
  it("allows the burst, then one token per 1/perSecond, and says how long to wait", () => {
    const { limit, advance } = buckets(2, 3);
    expect([limit.take("a"), limit.take("a"), limit.take("a")]).toEqual([0, 0, 0]);
    expect(limit.take("a")).toBe(1);
    expect(limit.take("b")).toBe(0);
    advance(499);
    expect(limit.take("a")).toBe(1);
    advance(1);
    expect(limit.take("a")).toBe(0);
    advance(60_000);
    expect([limit.take("a"), limit.take("a"), limit.take("a"), limit.take("a")]).toEqual([0, 0, 0, 1]);
  });

  it("takes a token given back again, never beyond the burst", () => {
    const { limit } = buckets(1, 2);
    limit.take("a");
    limit.giveBack("a");
    limit.giveBack("a");
    expect([limit.take("a"), limit.take("a"), limit.take("a")]).toEqual([0, 0, 1]);
  });

  it("neither refills nor drains when the clock is set back", () => {
    const { limit, advance } = buckets(1, 2);
    limit.take("a");
    advance(-60_000);
    expect([limit.take("a"), limit.take("a")]).toEqual([0, 1]);
    advance(1_000);
    expect(limit.take("a")).toBe(0);
  });

  it("with perSecond 0 never limits", () => {
    const { limit } = buckets(0, 1);
    for (let i = 0; i < 10; i++) expect(limit.take("a")).toBe(0);
  });
});
