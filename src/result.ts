/**
 * The outcome of a decision the caller must handle either way: a verify that
 * fails, an update entry that is rejected, a write that lost a race.
 * Request-level failures throw a PlatformError (src/errors.ts) instead.
 */
export type Result<T, E> = { ok: true; value: T } | { ok: false; error: E };

export const ok = <T>(value: T): Result<T, never> => ({ ok: true, value });

export const fail = <E>(error: E): Result<never, E> => ({ ok: false, error });
