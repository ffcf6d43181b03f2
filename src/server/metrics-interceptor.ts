import { isMessage } from "@bufbuild/protobuf";
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { VerifyResponseSchema } from "../../gen/platformapi/v1/launch_pb.js";
import { codeName } from "./errors.js";
import type { Metrics } from "./metrics.js";
import { protocolOf } from "./protocol.js";

/**
 * Counts and times every RPC by method, protocol and code, and counts verify
 * results from the answer itself, so no handler has to report them. It must
 * come first among the interceptors to see the code the caller gets.
 */
export function metricsInterceptor(metrics: Metrics): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const record = (code: string) =>
      metrics.recordRpc({
        method: `${req.service.typeName}/${req.method.name}`,
        protocol: protocolOf(req),
        code,
        seconds: (performance.now() - started) / 1000,
      });
    try {
      const res = await next(req);
      record("ok");
      if (!res.stream && isMessage(res.message, VerifyResponseSchema)) {
        metrics.recordVerification(res.message);
      }
      return res;
    } catch (error) {
      record(codeName(ConnectError.from(error).code));
      throw error;
    }
  };
}
