import { isMessage, type DescMethod } from "@bufbuild/protobuf";
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { VerifyResponseSchema } from "../../../gen/platformapi/v1/launch_pb.js";
import { whenEnded } from "./call-end.js";
import { codeName } from "./errors.js";
import type { Metrics } from "./metrics.js";
import { protocolOf } from "../http/protocol.js";

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
        method: methodLabel(req.method),
        protocol: protocolOf(req),
        code,
        seconds: (performance.now() - started) / 1000,
      });
    try {
      const res = whenEnded(await next(req), record);
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

// "platformapi.v1.LaunchTokenService/Verify", built once per method rather than on every call.
const methodLabels = new WeakMap<DescMethod, string>();
function methodLabel(method: DescMethod): string {
  let label = methodLabels.get(method);
  if (label === undefined) {
    label = `${method.parent.typeName}/${method.name}`;
    methodLabels.set(method, label);
  }
  return label;
}
