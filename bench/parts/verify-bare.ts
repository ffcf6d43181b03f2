import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { importJWK, jwtVerify, type JWK } from "jose";
import { EntitlementSchema, LaunchTokenService, VerifyResponseSchema } from "../../gen/platformapi/v1/launch_pb.js";
import { EntitlementStore } from "../../src/admin/entitlement-store.js";
import type { Db } from "mongodb";
import type { Config } from "../../src/config.js";
import { pseudonymousPartnerId } from "../../src/launch/pseudonym.js";
import { LaunchStore } from "../../src/launch/store.js";
import { MAX_BODY_BYTES } from "../../src/server/http/http-gateway.js";
import { bindPort, listen, type Listener } from "../../src/server/http/listener.js";

/**
 * The verify benchmark's baseline: a Connect router with the one RPC Verify
 * (same request and response types, same JSON options), served by the
 * service's own listener code with the service's options, doing only the work
 * a verify cannot skip: the Ed25519 check of the JWT (jose, the service's key),
 * one spend (delete of the unspent marker by `_id`) and one entitlement read by
 * `_id` (the document that also holds the launch record), side by side. No
 * interceptors (API key, rate limit, metrics, access log), no /v1 gateway, no
 * command monitoring on its driver client, no follow-up.
 *
 * With `spendAfterRead` (a diagnostic, not the baseline) it spends
 * after the read rather than side by side with it, as the service does (its
 * read decides whether a follow-up is recorded before the spend): the
 * service's two database calls in its order, with nothing else.
 */
export async function startBareVerify(options: {
  config: Config;
  db: Db;
  jwk: JWK;
  spendAfterRead: boolean;
}): Promise<Listener> {
  const { config, db, spendAfterRead } = options;
  const publicKey = await importJWK(options.jwk, "EdDSA");
  const tokens = new LaunchStore(db);
  const entitlements = new EntitlementStore(db);
  const handler = connectNodeAdapter({
    jsonOptions: { useProtoFieldName: true, alwaysEmitImplicit: true },
    readMaxBytes: MAX_BODY_BYTES,
    routes(router) {
      router.rpc(LaunchTokenService.method.verify, async (req) => {
        const { payload } = await jwtVerify(req.token, publicKey, {
          algorithms: ["EdDSA"],
          typ: "JWT",
          issuer: config.tokenIssuer,
          requiredClaims: ["jti", "sub", "aud", "iat", "exp"],
        });
        const claims = payload as { jti: string; sub: string; aud: string; iat: number } & Record<string, unknown>;
        const gameId = claims.game_id as number;
        let spent, record;
        if (spendAfterRead) {
          record = await entitlements.findUserGame(claims.sub, gameId);
          spent = await tokens.spendToken(claims.jti);
        } else {
          [spent, record] = await Promise.all([
            tokens.spendToken(claims.jti),
            entitlements.findUserGame(claims.sub, gameId),
          ]);
        }
        const { entitlement, launch } = record;
        if (!spent) return create(VerifyResponseSchema, { valid: false, error: "already_used" });
        return create(VerifyResponseSchema, {
          valid: true,
          platformUserId: claims.sub,
          partnerUserId: launch.partnerUserId ?? pseudonymousPartnerId(claims.aud, claims.sub),
          installationId: claims.installation_id as string,
          issuedAt: timestampFromDate(new Date(claims.iat * 1000)),
          entitlement: create(EntitlementSchema, {
            owns: entitlement?.owns ?? false,
            source: entitlement?.source ?? "",
            gameId,
            channelId: claims.channel_id as string,
            buildVersion: claims.build_version as string,
          }),
        });
      });
    },
  });
  return listen(handler, await bindPort(0, config.host), {
    headersTimeoutMs: config.serverHeadersTimeoutSeconds * 1000,
    requestTimeoutMs: config.serverRequestTimeoutSeconds * 1000,
    idleTimeoutMs: config.serverIdleTimeoutSeconds * 1000,
    maxConnections: config.serverMaxConnections,
  });
}
