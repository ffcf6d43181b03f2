import {
  MongoBulkWriteError,
  MongoDriverError,
  MongoError,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerClosedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from "mongodb";
import { UnavailableError } from "../errors.js";

const DUPLICATE_KEY = 11000;

/** True when a statement failure's code (a batched write's, say) says the key already exists. */
export function isDuplicateKeyCode(code: unknown): boolean {
  return code === DUPLICATE_KEY;
}

/** True when a write failed only because a document with that key already exists (a bulk write: every failure was one). */
export function isDuplicateKey(error: unknown): boolean {
  if (error instanceof MongoBulkWriteError) {
    const failures = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
    return failures.length > 0 && failures.every((failure) => isDuplicateKeyCode(failure.code));
  }
  return error instanceof MongoServerError && isDuplicateKeyCode(error.code);
}

/**
 * Server errors that say "not now" rather than "not this": a node shutting
 * down or stepping down, and an operation past its server-side `maxTimeMS`.
 */
const UNAVAILABLE_SERVER_CODES = new Set([
  50, // MaxTimeMSExpired
  91, // ShutdownInProgress
  189, // PrimarySteppedDown
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);

/** Driver errors the mongodb package does not export, recognised by name. */
const UNAVAILABLE_DRIVER_ERRORS = new Set(["MongoWaitQueueTimeoutError", "MongoPoolClosedError"]);

/**
 * Socket errors the driver (7.x) lets through unwrapped: a command written to a
 * connection the database has just closed fails with the socket's own EPIPE.
 */
const SOCKET_ERROR_CODES = new Set(["EPIPE", "ECONNRESET"]);

/** True when the database could not be reached, or did not answer within its deadline. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof Error && !(error instanceof MongoError)) {
    return SOCKET_ERROR_CODES.has((error as NodeJS.ErrnoException).code ?? "");
  }
  if (!(error instanceof MongoError)) return false;
  return (
    error instanceof MongoNetworkError || // MongoNetworkTimeoutError and PoolClearedError too
    error instanceof MongoServerSelectionError ||
    error instanceof MongoOperationTimeoutError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoTopologyClosedError ||
    error instanceof MongoServerClosedError ||
    (error instanceof MongoDriverError && UNAVAILABLE_DRIVER_ERRORS.has(error.name)) ||
    (error instanceof MongoServerError && typeof error.code === "number" && UNAVAILABLE_SERVER_CODES.has(error.code))
  );
}

/**
 * The one translation of a database failure into the project's error: an
 * UnavailableError (keeping the driver's error as `cause`), or undefined when
 * `error` is something else.
 */
export function asUnavailable(error: unknown): UnavailableError | undefined {
  if (!isDatabaseUnavailable(error)) return undefined;
  return new UnavailableError("database unavailable, try again later", { cause: error });
}

/**
 * What a holder's failure tells those queued behind it (KeyedLock's `shed`): an UnavailableError when the database
 * could not be reached or answer in time, else undefined (they run).
 */
export function unavailableOf(error: unknown): UnavailableError | undefined {
  return error instanceof UnavailableError ? error : asUnavailable(error);
}
