import { describe, expect, it } from "vitest";
import { clientNetwork } from "../src/server/client-address.js";
import { TokenBuckets } from "../src/server/rate-limit.js";

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

  it("with perSecond 0 never limits", () => {
    const { limit } = buckets(0, 1);
    for (let i = 0; i < 10; i++) expect(limit.take("a")).toBe(0);
  });
});

describe("clientNetwork", () => {
  it("counts an IPv4 address by itself, also when mapped into IPv6", () => {
    expect(clientNetwork("203.0.113.7")).toBe("203.0.113.7");
    expect(clientNetwork("::ffff:203.0.113.7")).toBe("203.0.113.7");
  });

  it("counts an IPv6 address by its /64, however it is written", () => {
    const network = "2001:db8:0:1::/64";
    expect(clientNetwork("2001:db8:0:1::1")).toBe(network);
    expect(clientNetwork("2001:0db8:0000:0001:ffff:ffff:ffff:fffe")).toBe(network);
    expect(clientNetwork("2001:db8:0:1:0:0:0:0")).toBe(network);
    expect(clientNetwork("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(clientNetwork("::1")).toBe("0:0:0:0::/64");
    expect(clientNetwork("64:ff9b::192.0.2.1")).toBe("64:ff9b:0:0::/64");
    expect(clientNetwork("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
  });
});
