import type { DescService } from "@bufbuild/protobuf";
import { cors } from "@connectrpc/connect";
import { API_KEY_HEADER } from "../calls/auth.js";
import type { NodeHandler, NodeRequest, NodeResponse } from "./node-types.js";

const ALLOW_METHODS = cors.allowedMethods.join(", ");
const ALLOW_HEADERS = [...cors.allowedHeaders, API_KEY_HEADER].join(", ");
// Retry-After: a browser client backs off a 429 as any other client does.
const EXPOSE_HEADERS = [...cors.exposedHeaders, "Retry-After"].join(", ");
// Browsers cap this (Chromium: 2 hours); a day asks for as long as they allow.
const PREFLIGHT_MAX_AGE_SECONDS = 86_400;

/**
 * Answers CORS for the browser origins in CORS_ORIGINS on /v1 and the RPC paths: preflights (OPTIONS with
 * Access-Control-Request-Method) get 204 with what the Connect, gRPC-Web and /v1 clients send; actual
 * responses say the origin may read them. Any other origin or path gets no CORS headers at all.
 */
export function withCors(
  handler: NodeHandler,
  origins: readonly string[],
  services: readonly DescService[],
): NodeHandler {
  if (origins.length === 0) return handler;
  const allowed = new Set(origins);
  const rpcPrefixes = services.map((service) => `/${service.typeName}/`);
  const isApiPath = (path: string) => path.startsWith("/v1/") || rpcPrefixes.some((prefix) => path.startsWith(prefix));
  return (req: NodeRequest, res: NodeResponse) => {
    if (!isApiPath((req.url ?? "").split("?", 1)[0])) return handler(req, res);
    // Answers differ by Origin: a shared cache must not hand a listed origin's answer to another one.
    res.setHeader("vary", "Origin");
    const origin = req.headers.origin;
    if (origin === undefined || !allowed.has(origin)) return handler(req, res);
    res.setHeader("access-control-allow-origin", origin);
    if (req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined) {
      res.statusCode = 204;
      res.setHeader("access-control-allow-methods", ALLOW_METHODS);
      res.setHeader("access-control-allow-headers", ALLOW_HEADERS);
      res.setHeader("access-control-max-age", String(PREFLIGHT_MAX_AGE_SECONDS));
      res.end();
      return;
    }
    res.setHeader("access-control-expose-headers", EXPOSE_HEADERS);
    return handler(req, res);
  };
}
