import { describe, expect, it } from "vitest";
import { clientNetwork } from "./client-address.js";

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
