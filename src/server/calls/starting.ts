import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

/**
 * Refuses every call of `services` while the instance starts (`starting` says why: the owner's memory filling, or
 * failing and tried again): 503 `unavailable`, nothing done, as /readyz says. Health and reflection still answer.
 */
export function startingInterceptor(starting: () => string | undefined, services: readonly DescService[]): Interceptor {
  const gated = new Set(services.map((service) => service.typeName));
  return (next) => async (req) => {
    const reason = gated.has(req.service.typeName) ? starting() : undefined;
    if (reason !== undefined) throw new ConnectError(`not ready: ${reason}`, Code.Unavailable);
    return next(req);
  };
}
