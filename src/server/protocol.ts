import { createContextKey, type ContextValues } from "@connectrpc/connect";

/** The wire protocol an RPC arrived on; `json` is the /v1 HTTP/JSON API. */
export type Protocol = "grpc" | "grpc_web" | "connect" | "json";

/**
 * Set by the /v1 gateway on the Connect JSON call it makes for a request, so
 * the handlers' interceptors can tell it from a Connect call of a client.
 */
export const viaHttpJson = createContextKey(false, { description: "request arrived on the /v1 HTTP/JSON API" });

/** The protocol of an RPC, from its content type (Connect GET requests have none). */
export function protocolOf(req: { header: Headers; contextValues: ContextValues }): Protocol {
  if (req.contextValues.get(viaHttpJson)) return "json";
  const type = req.header.get("content-type") ?? "";
  if (type.startsWith("application/grpc-web")) return "grpc_web";
  if (type.startsWith("application/grpc")) return "grpc";
  return "connect";
}
