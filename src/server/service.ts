import type { DescService } from "@bufbuild/protobuf";
import { createConnectRouter, type ConnectRouter } from "@connectrpc/connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { AdminService } from "../../gen/platformapi/v1/admin_pb.js";
import { EventService } from "../../gen/platformapi/v1/events_pb.js";
import { LaunchTokenService } from "../../gen/platformapi/v1/launch_pb.js";
import { PlayerService } from "../../gen/platformapi/v1/players_pb.js";
import openapiDocument from "../../gen/openapi/openapi.json" with { type: "json" };
import { ApiKeyCache } from "../admin/api-key-cache.js";
import { ensureBootstrapAdminKey } from "../admin/bootstrap.js";
import { createAdminService, type AdminServiceImpl } from "../admin/service.js";
import { AdminStore } from "../admin/store.js";
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import type { Logger } from "../log.js";
import { createLaunch } from "../launch/capability.js";
import type { LaunchServices } from "../launch/service.js";
import { createPlayers, type PlayerServiceImpl } from "../players/service.js";
import { accessLogInterceptor } from "./access-log.js";
import { authInterceptor, requiredScope } from "./auth.js";
import { errorInterceptor } from "./errors.js";
import { createHttpGateway, MAX_BODY_BYTES } from "./http-gateway.js";
import { sendError, sendJson } from "./http-errors.js";
import { rateLimitInterceptor } from "./rate-limit.js";
import { listen, type Listener, type RequestHandler } from "./listener.js";

export const SERVICES: readonly DescService[] = [LaunchTokenService, PlayerService, EventService, AdminService];

export interface ServiceOptions {
  config: Config;
  database: Database;
  log: Logger;
  /** The clock every capability reads; tests inject one. */
  now?: () => Date;
}

export interface RunningService extends Listener {
  /** The admin key generated at this start (first start without PLATFORM_ADMIN_KEY), to be shown once. */
  generatedAdminKey: string | undefined;
}

/** Creates indexes, wires every capability into one router and serves it on config.port. */
export async function startService({
  config,
  database,
  log,
  now = () => new Date(),
}: ServiceOptions): Promise<RunningService> {
  for (const service of SERVICES) service.methods.forEach(requiredScope);

  const adminStore = new AdminStore(database.db);
  await adminStore.createIndexes();
  const { generatedKey } = await ensureBootstrapAdminKey(adminStore, config.adminKey, now());
  const apiKeys = new ApiKeyCache(adminStore, config.apiKeyCacheSeconds * 1000);
  const admin = createAdminService({ store: adminStore, apiKeys, now });
  const players = await createPlayers({ database, now });
  const launch = await createLaunch({
    config,
    database,
    adminStore,
    now,
    log,
    onLaunchVerified: players.onLaunchVerified,
  });

  const router = createConnectRouter({
    interceptors: [
      accessLogInterceptor(log),
      errorInterceptor(log),
      authInterceptor(apiKeys),
      rateLimitInterceptor({ perSecond: config.rateLimitPerSecond, burst: config.rateLimitBurst }),
    ],
    // JSON speaks the proto field names and always shows defaults (valid: false, rejected: []).
    jsonOptions: { useProtoFieldName: true, alwaysEmitImplicit: true },
    readMaxBytes: MAX_BODY_BYTES,
  });
  registerServices(router, { admin, players: players.service, launch });

  const handler = createRequestHandler(router, database);
  const listener = await listen(handler, config.port, config.host);
  return {
    port: listener.port,
    generatedAdminKey: generatedKey,
    async close(graceMs) {
      launch.stop();
      await listener.close(graceMs);
    },
  };
}

interface Implementations {
  admin: AdminServiceImpl;
  players: PlayerServiceImpl;
  launch: LaunchServices;
}

/** Services without an implementation here answer `unimplemented`. */
function registerServices(router: ConnectRouter, { admin, players, launch }: Implementations): void {
  router.service(AdminService, { ...admin, rotateSigningKey: launch.rotateSigningKey });
  router.service(LaunchTokenService, launch.launch);
  router.service(PlayerService, { ...players, link: launch.link });
  router.service(EventService, {});
}

function createRequestHandler(router: ConnectRouter, database: Database): RequestHandler {
  const rpcByPath = new Map(router.handlers.map((h) => [h.requestPath, h]));
  const handleHttpJson = createHttpGateway(SERVICES, router.handlers);

  return (req, res) => {
    const path = (req.url ?? "").split("?", 1)[0];
    if (path === "/healthz") {
      sendJson(res, 200, { status: "ok" });
      return;
    }
    if (path === "/readyz") {
      database.db
        .command({ ping: 1 })
        .then(() => sendJson(res, 200, { status: "ok" }))
        .catch(() => sendError(res, 503, "unavailable", "database unreachable"));
      return;
    }
    // The OpenAPI document of /v1 (generated from the proto by tools/protoc-gen-openapi); no key needed.
    if (path === "/v1/openapi.json" && req.method === "GET") return sendJson(res, 200, openapiDocument);
    if (handleHttpJson(req, res)) return;
    const rpc = rpcByPath.get(path);
    if (!rpc) {
      sendError(res, 404, "not_found", `no endpoint ${path}`);
      return;
    }
    rpc(universalRequestFromNodeRequest(req, res, undefined, undefined))
      .then((response) => universalResponseToNodeResponse(response, res))
      .catch(() => res.destroy());
  };
}
