import type { JsonReadOptions, JsonWriteOptions } from "@bufbuild/protobuf";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { Health } from "../../../gen/grpc/health/v1/health_pb.js";
import openapiDocument from "../../../gen/openapi/openapi.json" with { type: "json" };
import type { Clock } from "../../clock.js";
import type { Config } from "../../config.js";
import type { Database } from "../../db/database.js";
import type { Logger } from "../../log.js";
import { accessLogInterceptor } from "../calls/access-log.js";
import { authInterceptor } from "../calls/auth.js";
import type { Capabilities } from "../calls/capabilities.js";
import { clientContextValues } from "./client-address.js";
import { checkBinaryBody, undecodableBodyInterceptor } from "../bodies/binary-body-check.js";
import { checkConnectJson } from "../bodies/connect-json-check.js";
import { withCors } from "./cors.js";
import { isBrowserAtRoot, isDashboardPath, redirectToDashboard, serveDashboard } from "../dashboard.js";
import { errorInterceptor } from "../calls/errors.js";
import { methodNotAllowedBody } from "../calls/handler-wrapper.js";
import { registerHealth } from "../health.js";
import { createHttpGateway, MAX_BODY_BYTES, type HttpGateway } from "./http-gateway.js";
import { sendError, sendJson } from "./http-errors.js";
import { metricsHandler, type Metrics } from "../calls/metrics.js";
import { metricsInterceptor } from "../calls/metrics-interceptor.js";
import type { NodeHandler } from "./node-types.js";
import { FailedAuthLimit, rateLimitInterceptor } from "../calls/rate-limit.js";
import { createReadinessCheck } from "../readiness.js";
import { registerReflection, REFLECTION_SERVICES } from "../reflection.js";
import { registerServices, SERVICES } from "../routes.js";
import { createUnknownRpcResponder } from "./unknown-rpc.js";
import { sizeLimitAs413 } from "../bodies/size-limit-status.js";
import { streamsInterceptor } from "../calls/streams.js";
import { markInvalidUtf8, strictUtf8Decoder } from "../bodies/unicode.js";
import { validationInterceptor } from "../calls/validate.js";

/**
 * The router hands jsonOptions to connect's JSON serialization, which also
 * takes a text decoder (createJsonSerialization's options, not in the
 * router's type); test/server/bad-input.test.ts fails if that stops.
 */
const jsonOptions: Partial<JsonReadOptions & JsonWriteOptions> & { textDecoder: typeof strictUtf8Decoder } = {
  // JSON speaks the proto field names and always shows defaults (valid: false, rejected: []).
  useProtoFieldName: true,
  alwaysEmitImplicit: true,
  // A Connect JSON body that is not UTF-8 is invalid_argument, not text with U+FFFD in it.
  textDecoder: strictUtf8Decoder,
};

export interface RequestHandlerOptions {
  config: Config;
  database: Database;
  log: Logger;
  clock: Clock;
  capabilities: Capabilities;
  metrics: Metrics;
  /** Aborted when the service starts closing: open health Watch calls then end instead of holding the grace period. */
  closing: AbortSignal;
}

/**
 * Every request of the one port: gRPC, gRPC-Web and Connect through
 * connect-node's adapter; the /v1 JSON gateway, health and readiness through
 * its fallback.
 */
export function createRequestHandler(options: RequestHandlerOptions): NodeHandler {
  const { config, database, log, clock, capabilities, metrics, closing } = options;
  const serveMetrics = metricsHandler(metrics);
  const readiness = createReadinessCheck({ database, timeoutMs: config.readyTimeoutMs });
  // Binary messages: invalid UTF-8 is refused by the validation interceptor (see unicode.ts).
  markInvalidUtf8();
  // gRPC's standard health and reflection services, so probes and grpcurl work as with any gRPC server.
  const served = [...SERVICES, Health, ...REFLECTION_SERVICES];
  let gateway: HttpGateway | undefined;
  let answerUnknownRpc: ReturnType<typeof createUnknownRpcResponder> | undefined;
  const adapter = connectNodeAdapter({
    interceptors: [
      // First, so it counts the code the caller actually gets.
      metricsInterceptor(metrics),
      accessLogInterceptor(log),
      errorInterceptor(log),
      // Before authentication: a body that cannot be decoded is 400 whatever the key, as malformed JSON is.
      undecodableBodyInterceptor(),
      authInterceptor({
        apiKeys: capabilities.apiKeys,
        failedAuthentications: new FailedAuthLimit({
          perMinute: config.authFailuresPerMinute,
          burst: config.authFailuresBurst,
          clock,
        }),
      }),
      rateLimitInterceptor({ perSecond: config.rateLimitPerSecond, burst: config.rateLimitBurst, clock }),
      // Only an authenticated caller within its rate learns about the request rules.
      validationInterceptor(),
      // Last: a stream's place is taken by a valid request only.
      streamsInterceptor({ perKey: config.streamsPerKey, perProject: config.streamsPerProject }),
    ],
    contextValues: clientContextValues,
    jsonOptions,
    readMaxBytes: MAX_BODY_BYTES,
    routes(router) {
      registerServices(router, capabilities);
      registerHealth(router, { readiness: () => readiness().then((r) => r.ready), services: served, closing });
      registerReflection(router, served);
      router.handlers.forEach((handler, i) => {
        router.handlers[i] = methodNotAllowedBody(
          sizeLimitAs413(checkBinaryBody(checkConnectJson(handler, MAX_BODY_BYTES), MAX_BODY_BYTES)),
        );
      });
      gateway = createHttpGateway(SERVICES, router.handlers, log);
      answerUnknownRpc = createUnknownRpcResponder(served);
    },
    fallback(req, res) {
      const path = (req.url ?? "").split("?", 1)[0];
      if (path === "/healthz") {
        sendJson(res, 200, { status: "ok" });
      } else if (path === "/v1/openapi.json" && req.method === "GET") {
        // The OpenAPI document of /v1, generated from the proto by tools/protoc-gen-openapi.
        sendJson(res, 200, openapiDocument);
      } else if (isDashboardPath(path)) {
        void serveDashboard(req, res, path);
      } else if (isBrowserAtRoot(req, path)) {
        redirectToDashboard(res);
      } else if (path === "/metrics") {
        serveMetrics(req, res);
      } else if (path === "/readyz") {
        void readiness().then(async (r) => {
          if (!r.ready) return sendError(res, 503, "unavailable", r.reason);
          // Detail for operators: how far the event apply is behind, whether ingestion pushes back for it, and what is
          // parked (not readiness conditions: reads and player writes go on).
          const { backpressure } = capabilities.events;
          const [lag, parked] = await Promise.all([
            capabilities.events.lag.measure().catch(() => undefined),
            capabilities.events.parked.list().catch(() => undefined),
          ]);
          const limits = lag ? backpressure.limitsReached(lag) : [];
          const events = lag && {
            lag_seconds: lag.seconds,
            queue_depth: lag.depth,
            refusing_events: limits.length > 0,
            refusing_limits: limits,
            // Segments set aside after failing again and again (an admin lists and retries them).
            parked_segments: (parked ?? []).map(({ projectId, seq, error }) => ({ project_id: projectId, seq, error })),
          };
          sendJson(res, 200, { status: "ok", ...(events && { events }) });
        });
      } else if (!gateway?.handle(req, res) && !answerUnknownRpc?.(req, res, path)) {
        sendError(res, 404, "not_found", `no endpoint ${path}`);
      }
    },
  });
  return withCors(adapter, config.corsOrigins, served);
}
