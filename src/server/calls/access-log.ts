import { ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "../../log.js";
import { callerKey } from "./caller.js";
import { whenEnded } from "./call-end.js";
import { codeName } from "./errors.js";

/** One log line per RPC: method, outcome, duration and the key id (never the key). */
export function accessLogInterceptor(log: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const line = () => ({
      rpc: `${req.service.typeName}/${req.method.name}`,
      key_id: req.contextValues.get(callerKey)?.keyId,
      ms: Math.round((performance.now() - started) * 10) / 10,
    });
    try {
      return whenEnded(await next(req), (code) => log.info({ ...line(), code }, "rpc"));
    } catch (error) {
      log.info({ ...line(), code: codeName(ConnectError.from(error).code) }, "rpc");
      throw error;
    }
  };
}
