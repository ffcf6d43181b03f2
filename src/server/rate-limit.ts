import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { callerKey } from "./caller.js";

export interface RateLimit {
  /** Sustained requests a second per API key; 0 turns limiting off. */
  perSecond: number;
  /** Requests a key may make at once after being idle. */
  burst: number;
}

/**
 * A token bucket per API key, in this process's memory. It runs after
 * authentication, so unauthenticated floods are refused by the key check
 * before they cost a bucket, and one studio cannot starve the others.
 */
export function rateLimitInterceptor({ perSecond, burst }: RateLimit, now: () => number = Date.now): Interceptor {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return (next) => async (req) => {
    const caller = req.contextValues.get(callerKey);
    if (perSecond === 0 || !caller) return next(req);
    const t = now();
    const bucket = buckets.get(caller.keyId) ?? { tokens: burst, at: t };
    bucket.tokens = Math.min(burst, bucket.tokens + ((t - bucket.at) / 1000) * perSecond);
    bucket.at = t;
    buckets.set(caller.keyId, bucket);
    if (bucket.tokens < 1) {
      const retryAfter = Math.ceil((1 - bucket.tokens) / perSecond);
      throw new ConnectError(
        `rate limit of ${perSecond} requests a second for this API key exceeded`,
        Code.ResourceExhausted,
        {
          "retry-after": String(retryAfter),
        },
      );
    }
    bucket.tokens -= 1;
    return next(req);
  };
}
