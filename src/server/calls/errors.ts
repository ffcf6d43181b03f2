import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { asUnavailable } from "../../db/errors.js";
import { PlatformError, QueueBehindError, type ErrorCode } from "../../errors.js";
import type { Logger } from "../../log.js";

/** The one mapping of domain error codes to RPC codes (and through them to HTTP statuses). */
const RPC_CODES: Readonly<Record<ErrorCode, Code>> = {
  invalid_argument: Code.InvalidArgument,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  permission_denied: Code.PermissionDenied,
  aborted: Code.Aborted,
  resource_exhausted: Code.ResourceExhausted,
  unavailable: Code.Unavailable,
  internal: Code.Internal,
};

/**
 * Turns what a handler throws into the error a caller should see: domain
 * errors by their code, ConnectErrors as they are, a database that is
 * unreachable or past its deadline as `unavailable`, and anything else as
 * `internal` without its details (they are logged instead). A server stream's
 * messages are produced after the handler returned: what their iteration
 * throws is turned the same way.
 */
export function errorInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    const rpc = `${req.service.typeName}/${req.method.name}`;
    try {
      const res = await next(req);
      if (!res.stream) return res;
      return { ...res, message: mappedErrors(res.message, rpc, log) };
    } catch (error) {
      throw callerError(error, rpc, log);
    }
  };
}

async function* mappedErrors<T>(messages: AsyncIterable<T>, rpc: string, log: Logger): AsyncGenerator<T> {
  try {
    yield* messages;
  } catch (error) {
    throw callerError(error, rpc, log);
  }
}

function callerError(error: unknown, rpc: string, log: Logger): ConnectError {
  if (error instanceof ConnectError) return error;
  const unavailable = asUnavailable(error);
  if (unavailable) log.error({ rpc, err: error }, "database unavailable");
  const domainError = unavailable ?? error;
  if (domainError instanceof PlatformError) {
    if (domainError.code === "internal") log.error({ rpc, err: domainError }, "database refused a write");
    // Retry-After, as the rate limit sends it: the 429 of a queue that is behind tells when to come back.
    const headers =
      domainError instanceof QueueBehindError ? { "retry-after": String(domainError.retryAfterSeconds) } : undefined;
    return new ConnectError(domainError.message, RPC_CODES[domainError.code], headers, undefined, domainError);
  }
  log.error({ rpc, err: error }, "unexpected error");
  return new ConnectError("internal error", Code.Internal);
}

/** The Connect protocol's name of a code, as logs and metrics label it: `invalid_argument` for Code.InvalidArgument. */
export function codeName(code: Code): string {
  return Code[code].replace(/(?<!^)[A-Z]/g, (letter) => `_${letter}`).toLowerCase();
}
