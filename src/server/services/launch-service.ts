import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  EntitlementSchema,
  GetJwksResponseSchema,
  IssueResponseSchema,
  JwkSchema,
  type LaunchTokenService,
  VerifyResponseSchema,
} from "../../../gen/platformapi/v1/launch_pb.js";
import type { Launch } from "../../launch/capability.js";
import { projectOf } from "../calls/caller.js";
import { canonicalUuid } from "../calls/validate.js";
import { configMessages } from "./config-requests.js";
import { encodedMaps, isBinaryCall } from "./encoded-maps.js";

/** RFC 3339 UTC with whole seconds and a Z, as PLATFORM_TOKEN_EXPIRES_AT promises. */
const rfc3339Seconds = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, "Z");

/** LaunchTokenService: issue (the launcher), verify (the studio backend), the JWKS. */
export function createLaunchService({ tokens, keyring }: Launch): ServiceImpl<typeof LaunchTokenService> {
  return {
    async issue(req) {
      const { token, expiresAt } = await tokens.issue({
        platformUserId: canonicalUuid(req.platformUserId),
        installationId: canonicalUuid(req.installationId),
        gameId: req.gameId,
        channelId: req.channelId.trim(),
        buildVersion: req.buildVersion.trim(),
      });
      return create(IssueResponseSchema, {
        token,
        expiresAt: timestampFromDate(expiresAt),
        env: { PLATFORM_LAUNCH_TOKEN: token, PLATFORM_TOKEN_EXPIRES_AT: rfc3339Seconds(expiresAt) },
      });
    },

    async verify(req, ctx) {
      const result = await tokens.verify(req.token.trim(), projectOf(ctx));
      if (!result.ok) return create(VerifyResponseSchema, { valid: false, error: result.error });
      const launch = result.value;
      const answer = create(VerifyResponseSchema, {
        valid: true,
        platformUserId: launch.platformUserId,
        partnerUserId: launch.partnerUserId,
        installationId: launch.installationId,
        issuedAt: timestampFromDate(launch.issuedAt),
        entitlement: create(EntitlementSchema, launch.entitlement),
      });
      // A binary answer carries the player's config and experiments encoded once (encoded-maps.ts); JSON, the maps.
      if (isBinaryCall(ctx)) answer.$unknown = encodedMaps(launch.config, launch.experiments);
      else {
        answer.config = configMessages(launch.config);
        answer.experiments = Object.fromEntries(launch.experiments);
      }
      return answer;
    },

    getJwks() {
      const keys = keyring
        .verificationKeys()
        .map((key) =>
          create(JwkSchema, { kty: "OKP", crv: "Ed25519", x: key.x, kid: key.kid, alg: "EdDSA", use: "sig" }),
        );
      return create(GetJwksResponseSchema, { keys });
    },
  };
}
