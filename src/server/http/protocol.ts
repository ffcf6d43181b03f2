import { createContextKey, type ContextValues } from "@connectrpc/connect";

/** The wire protocol an RPC arrived on; `json` is the /v1 HTTP/JSON API. */
export type Protocol = "grpc" | "grpc_web" | "connect" | "json";

/**
 * Set by the /v1 gateway on the Connect JSON call it makes for a request, so
 * the handlers' interceptors can tell it from a Connect call of a client.
 */
export const viaHttpJson = createContextKey(false, { description: "request arrived on the /v1 HTTP/JSON API" });

/**
 * Set by the /v1 gateway and for Connect JSON (connect-json-check.ts): the
 * paths of the body's map and Struct fields that had a `__proto__` key, which
 * protobuf-es drops while decoding (see JsonRequest.protoKeyPaths). In a
 * binary message (gRPC, Connect proto) the key is lost before any check sees it.
 */
export const protoKeyPaths = createContextKey<ReadonlySet<string>>(new Set(), {
  description: "map fields of a /v1 body with a __proto__ key",
});

/** Set with protoKeyPaths: the paths of event timestamps a JSON body gave that are not RFC 3339 (BodyFindings). */
export const unreadableTimestamps = createContextKey<ReadonlySet<string>>(new Set(), {
  description: "event timestamps of a JSON body that are not RFC 3339",
});

/** The protocol of an RPC, from its content type (Connect GET requests have none). */
export function protocolOf(req: { header: Headers; contextValues: ContextValues }): Protocol {
  if (req.contextValues.get(viaHttpJson)) return "json";
  const type = req.header.get("content-type") ?? "";
  if (type.startsWith("application/grpc-web")) return "grpc_web";
  if (type.startsWith("application/grpc")) return "grpc";
  return "connect";
}
