/**
 * How things fail. Errors the domain throws for a request it cannot serve: each class has a fixed `code`; the RPC
 * handlers map codes to protocol statuses in one place (src/server/calls/errors.ts). Outcomes a caller must handle
 * either way (a token that does not verify, an entry that is rejected, a write that lost a race) are Results, not
 * errors.
 */
export type ErrorCode =
  | "invalid_argument"
  | "not_found"
  | "already_exists"
  | "permission_denied"
  | "aborted"
  | "resource_exhausted"
  | "unavailable"
  | "internal";

export abstract class PlatformError extends Error {
  abstract readonly code: ErrorCode;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A request value the service cannot use; the message names the field. */
export class InvalidArgumentError extends PlatformError {
  readonly code = "invalid_argument";
}

export class NotFoundError extends PlatformError {
  readonly code = "not_found";
}

export class AlreadyExistsError extends PlatformError {
  readonly code = "already_exists";
}

export class PermissionDeniedError extends PlatformError {
  readonly code = "permission_denied";
}

/** Writers kept colliding on one document; the call changed nothing and may be retried. */
export class ContentionError extends PlatformError {
  readonly code = "aborted";
}

/** The event queue is further behind than EVENT_MAX_LAG_SECONDS; the call accepted nothing. */
export class QueueBehindError extends PlatformError {
  readonly code = "resource_exhausted";

  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/** The database is unreachable or missed its deadline; nothing was half-written. */
export class UnavailableError extends PlatformError {
  readonly code = "unavailable";
}

/**
 * The database refused a statement the service sent (a document over its size
 * limit, say): a fault of the service, not of the request. `cause` holds what
 * the database answered.
 */
export class WriteRefusedError extends PlatformError {
  readonly code = "internal";
}

/** The outcome of a decision the caller must handle either way. */
export type Result<T, E> = { ok: true; value: T } | { ok: false; error: E };

export const ok = <T>(value: T): Result<T, never> => ({ ok: true, value });

export const fail = <E>(error: E): Result<never, E> => ({ ok: false, error });

/** An input refused (an update entry, an event): the code the API answers with, and a message naming the field. */
export interface Rejection<Code extends string> {
  code: Code;
  message: string;
}
