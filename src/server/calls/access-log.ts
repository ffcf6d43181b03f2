import { ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "../../log.js";
import { callerKey } from "./caller.js";
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
      const res = await next(req);
      log.info({ ...line(), code: "ok" }, "rpc");
      return res;
    } catch (error) {
      log.info({ ...line(), code: codeName(ConnectError.from(error).code) }, "rpc");
      throw error;
    }
  };
}
