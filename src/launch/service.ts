import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { type AdminService, RotateSigningKeyResponseSchema } from "../../gen/platformapi/v1/admin_pb.js";
import {
  EntitlementSchema,
  GetJwksResponseSchema,
  IssueResponseSchema,
  JwkSchema,
  type LaunchTokenService,
  VerifyResponseSchema,
} from "../../gen/platformapi/v1/launch_pb.js";
import { LinkResponseSchema, type PlayerService } from "../../gen/platformapi/v1/players_pb.js";
import { projectOf } from "../server/caller.js";
import { requireGameId, requireText, requireUuid } from "../validate.js";
import type { Keyring } from "./keyring.js";
import type { LaunchTokens } from "./launch-tokens.js";

export interface LaunchServices {
  launch: ServiceImpl<typeof LaunchTokenService>;
  rotateSigningKey: ServiceImpl<typeof AdminService>["rotateSigningKey"];
  link: ServiceImpl<typeof PlayerService>["link"];
}

/** RFC 3339 UTC with whole seconds and a Z, as PLATFORM_TOKEN_EXPIRES_AT promises. */
const rfc3339Seconds = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, "Z");

export function createLaunchServices(tokens: LaunchTokens, keyring: Keyring): LaunchServices {
  return {
    launch: {
      async issue(req) {
        const launch = {
          platformUserId: requireUuid("platform_user_id", req.platformUserId),
          installationId: requireUuid("installation_id", req.installationId),
          gameId: requireGameId(req.gameId),
          channelId: optionalText("channel_id", req.channelId),
          buildVersion: optionalText("build_version", req.buildVersion),
        };
        const outcome = await tokens.issue(launch);
        if (!outcome.ok) {
          throw outcome.reason === "unknown_game"
            ? new ConnectError(`game_id: no project has game ${launch.gameId}`, Code.NotFound)
            : new ConnectError(`platform user does not own game ${launch.gameId}`, Code.PermissionDenied);
        }
        const expiresAt = rfc3339Seconds(outcome.expiresAt);
        return create(IssueResponseSchema, {
          token: outcome.token,
          expiresAt: timestampFromDate(outcome.expiresAt),
          env: { PLATFORM_LAUNCH_TOKEN: outcome.token, PLATFORM_TOKEN_EXPIRES_AT: expiresAt },
        });
      },

      async verify(req, ctx) {
        const outcome = await tokens.verify(req.token.trim(), projectOf(ctx));
        if (!outcome.valid) return create(VerifyResponseSchema, { valid: false, error: outcome.error });
        return create(VerifyResponseSchema, {
          valid: true,
          platformUserId: outcome.platformUserId,
          partnerUserId: outcome.partnerUserId,
          installationId: outcome.installationId,
          issuedAt: timestampFromDate(outcome.issuedAt),
          entitlement: create(EntitlementSchema, outcome.entitlement),
        });
      },

      getJwks() {
        return create(GetJwksResponseSchema, {
          keys: keyring
            .verificationKeys()
            .map((key) =>
              create(JwkSchema, { kty: "OKP", crv: "Ed25519", x: key.x, kid: key.kid, alg: "EdDSA", use: "sig" }),
            ),
        });
      },
    },

    async rotateSigningKey() {
      const key = await keyring.rotate();
      return create(RotateSigningKeyResponseSchema, { kid: key.kid, createdAt: timestampFromDate(key.createdAt) });
    },

    async link(req, ctx) {
      const platformUserId = requireUuid("platform_user_id", req.platformUserId);
      const partnerUserId = requireText("partner_user_id", req.partnerUserId, 256);
      await tokens.link(projectOf(ctx), platformUserId, partnerUserId);
      return create(LinkResponseSchema, { platformUserId, partnerUserId });
    },
  };
}

function optionalText(field: string, value: string): string {
  return value === "" ? "" : requireText(field, value, 128);
}
