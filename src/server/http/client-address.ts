import type http from "node:http";
import type http2 from "node:http2";
import net from "node:net";
import { createContextKey, createContextValues, type ContextValues } from "@connectrpc/connect";

/**
 * The TCP peer address of the connection a request arrived on. Forwarding
 * headers (X-Forwarded-For) are not trusted: any client could forge them.
 */
export const clientAddressKey = createContextKey<string>("unknown", { description: "client address" });

/** The context values a request starts with; connect-node's `contextValues` option takes this function. */
export function clientContextValues(req: http.IncomingMessage | http2.Http2ServerRequest): ContextValues {
  return createContextValues().set(clientAddressKey, req.socket.remoteAddress ?? "unknown");
}

/**
 * The network a client address stands for when counting its attempts: an IPv4
 * address itself, an IPv6 address its /64 (one host usually holds a whole /64,
 * so counting single addresses would let it rotate through billions).
 */
export function clientNetwork(address: string): string {
  const mappedIpv4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mappedIpv4) return mappedIpv4[1];
  if (!net.isIPv6(address)) return address;
  const [head, tail] = address.split("%", 1)[0].split("::");
  const groups = head === "" ? [] : head.split(":");
  if (tail !== undefined) {
    // "::" stands for as many zero groups as are missing; an embedded IPv4 address counts as two.
    const tailGroups = tail === "" ? [] : tail.split(":");
    const tailLength = tailGroups.length + (tail.includes(".") ? 1 : 0);
    groups.push(...Array<string>(8 - groups.length - tailLength).fill("0"), ...tailGroups);
  }
  return `${groups
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(":")}::/64`;
}
