import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import {
  MongoNetworkError,
  MongoNotConnectedError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from "mongodb";
import type { Logger } from "../log.js";

function isDatabaseUnreachable(error: unknown): boolean {
  return (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoTopologyClosedError
  );
}

/**
 * Turns what a handler throws into the error a caller should see: its own
 * ConnectErrors as they are, an unreachable database as `unavailable`, and
 * anything else as `internal` without its details (they are logged instead).
 */
export function errorInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (error) {
      if (error instanceof ConnectError) throw error;
      const rpc = `${req.service.typeName}/${req.method.name}`;
      if (isDatabaseUnreachable(error)) {
        log.error({ rpc, err: error }, "database unreachable");
        throw new ConnectError("database unavailable, try again later", Code.Unavailable);
      }
      log.error({ rpc, err: error }, "unexpected error");
      throw new ConnectError("internal error", Code.Internal);
    }
  };
}
