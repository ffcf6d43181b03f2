import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { wrapHandler } from "../calls/handler-wrapper.js";

/**
 * connect-node refuses a request body over readMaxBytes with
 * resource_exhausted, which the Connect protocol sends as HTTP 429: the rate
 * limit's status. The error table gives a body over the size limit 413, as on
 * /v1; the code in the body stays resource_exhausted, which is what Connect
 * clients read. The rate limit's 429 always carries Retry-After and the size
 * limit's never does, which tells them apart. gRPC and gRPC-Web answer HTTP
 * 200 with the code in trailers and pass unchanged.
 */
export function sizeLimitAs413(handler: UniversalHandler): UniversalHandler {
  return wrapHandler(handler, async (req) => {
    const res = await handler(req);
    return res.status === 429 && !res.header?.has("retry-after") ? { ...res, status: 413 } : res;
  });
}
