/**
 * The outcome of a decision the caller must handle either way: a verify that
 * fails, an update entry that is rejected, a write that lost a race.
 * Request-level failures throw a PlatformError (src/errors.ts) instead.
 */
export type Result<T, E> = { ok: true; value: T } | { ok: false; error: E };

export const ok = <T>(value: T): Result<T, never> => ({ ok: true, value });

export const fail = <E>(error: E): Result<never, E> => ({ ok: false, error });

/** An input refused (an update entry, an event): the code the API answers with, and a message naming the field. */
export interface Rejection<Code extends string> {
  code: Code;
  message: string;
}
