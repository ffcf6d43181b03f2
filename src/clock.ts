/**
 * The one source of time. Everything that decides by time (token expiry, cache
 * lifetimes, rate limits, reloads) reads a Clock, so tests can move time by hand.
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
