import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Clock } from "../../clock.js";
import { callerKey } from "./caller.js";
import { clientNetwork } from "../http/client-address.js";

export interface RateLimit {
  /** Sustained attempts a second per key; 0 turns limiting off. */
  perSecond: number;
  /** Attempts a key may make at once after being idle. */
  burst: number;
  clock: Clock;
}

// Buckets kept at most; the least recently used goes first. A dropped bucket comes back full, so
// this only needs to be far above the number of keys (or attackers) active at one time.
const MAX_BUCKETS = 100_000;

/** A token bucket per key, in this process's memory. */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly limit: RateLimit) {}

  /** Takes a token for `key`: 0 when it had one, else the whole seconds until it will have one. */
  take(key: string): number {
    const { perSecond, burst, clock } = this.limit;
    if (perSecond === 0) return 0;
    const now = clock.now().getTime();
    const bucket = this.buckets.get(key) ?? { tokens: burst, at: now };
    // A clock set back (NTP, a test) refills nothing and takes nothing.
    const elapsedMs = Math.max(0, now - bucket.at);
    bucket.tokens = Math.min(burst, bucket.tokens + (elapsedMs / 1000) * perSecond);
    bucket.at = now;
    this.buckets.delete(key);
    this.buckets.set(key, bucket);
    if (this.buckets.size > MAX_BUCKETS) this.buckets.delete(this.buckets.keys().next().value!);
    if (bucket.tokens < 1) return Math.ceil((1 - bucket.tokens) / perSecond);
    bucket.tokens -= 1;
    return 0;
  }

  /** Returns a token taken for an attempt that turned out not to count. */
  giveBack(key: string): void {
    const bucket = this.buckets.get(key);
    if (bucket) bucket.tokens = Math.min(this.limit.burst, bucket.tokens + 1);
  }
}

function rateLimited(message: string, retryAfterSeconds: number): ConnectError {
  return new ConnectError(message, Code.ResourceExhausted, { "retry-after": String(retryAfterSeconds) });
}

/**
 * A token bucket per API key. It runs after authentication, so one studio
 * cannot starve the others; unauthenticated floods are FailedAuthLimit's.
 */
export function rateLimitInterceptor(limit: RateLimit): Interceptor {
  const buckets = new TokenBuckets(limit);
  return (next) => async (req) => {
    const caller = req.contextValues.get(callerKey);
    if (!caller) return next(req);
    const wait = buckets.take(caller.keyId);
    if (wait > 0)
      throw rateLimited(`rate limit of ${limit.perSecond} requests a second for this API key exceeded`, wait);
    return next(req);
  };
}

/**
 * Failed authentications per client network (see clientNetwork), limited
 * per minute: attempts are spent before the lookup they would cost (see
 * authInterceptor), so a flood of made-up keys costs at most the burst and
 * then `perMinute` lookups, however many arrive at once.
 */
export class FailedAuthLimit {
  private readonly buckets: TokenBuckets;

  constructor(private readonly limit: { perMinute: number; burst: number; clock: Clock }) {
    this.buckets = new TokenBuckets({ perSecond: limit.perMinute / 60, burst: limit.burst, clock: limit.clock });
  }

  /** Spends an attempt of the client at `address`; throws resource_exhausted (429) when it has none left. */
  spend(address: string): void {
    const wait = this.buckets.take(clientNetwork(address));
    if (wait > 0) {
      throw rateLimited(`more than ${this.limit.perMinute} failed authentications a minute from this address`, wait);
    }
  }

  /** Returns an attempt spent on a key that proved good. */
  giveBack(address: string): void {
    this.buckets.giveBack(clientNetwork(address));
  }
}
