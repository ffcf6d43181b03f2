import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import {
  MongoNetworkError,
  MongoNotConnectedError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from "mongodb";
import { PlatformError, type ErrorCode } from "../errors.js";
import type { Logger } from "../log.js";

/** The one mapping of domain error codes to RPC codes (and through them to HTTP statuses). */
const RPC_CODES: Readonly<Record<ErrorCode, Code>> = {
  invalid_argument: Code.InvalidArgument,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  permission_denied: Code.PermissionDenied,
  aborted: Code.Aborted,
  unavailable: Code.Unavailable,
};

function isDatabaseUnreachable(error: unknown): boolean {
  return (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoTopologyClosedError
  );
}

/**
 * Turns what a handler throws into the error a caller should see: domain
 * errors by their code, ConnectErrors as they are, an unreachable database as
 * `unavailable`, and anything else as `internal` without its details (they
 * are logged instead).
 */
export function errorInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (error) {
      if (error instanceof ConnectError) throw error;
      if (error instanceof PlatformError)
        throw new ConnectError(error.message, RPC_CODES[error.code], undefined, undefined, error);
      const rpc = `${req.service.typeName}/${req.method.name}`;
      if (isDatabaseUnreachable(error)) {
        log.error({ rpc, err: error }, "database unreachable");
        throw new ConnectError("database unavailable, try again later", Code.Unavailable, undefined, undefined, error);
      }
      log.error({ rpc, err: error }, "unexpected error");
      throw new ConnectError("internal error", Code.Internal);
    }
  };
}
