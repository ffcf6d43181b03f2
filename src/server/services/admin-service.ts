import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type AdminService,
  CreateApiKeyResponseSchema,
  CreateProjectResponseSchema,
  ProjectSchema,
  RevokeApiKeyResponseSchema,
  RotateSigningKeyResponseSchema,
  SetEntitlementResponseSchema,
} from "../../../gen/platformapi/v1/admin_pb.js";
import { EntitlementSchema } from "../../../gen/platformapi/v1/launch_pb.js";
import type { Admin } from "../../admin/admin.js";
import { isApiKeyType } from "../../admin/api-keys.js";
import { InvalidArgumentError } from "../../errors.js";
import type { Keyring } from "../../launch/keyring.js";
import { canonicalUuid, requiredText } from "../validate.js";

/** AdminService: projects, API keys, entitlements, and rotation of the launch-token signing key. */
export function createAdminService(admin: Admin, keyring: Keyring): ServiceImpl<typeof AdminService> {
  return {
    async createProject(req) {
      const { project, privateKey, publicKey } = await admin.createProject(requiredText("name", req.name), req.gameId);
      return create(CreateProjectResponseSchema, { project: create(ProjectSchema, project), privateKey, publicKey });
    },

    async createApiKey(req) {
      // The proto admits only the domain's key types; this narrows the string to them.
      if (!isApiKeyType(req.type)) throw new InvalidArgumentError(`type: no key type ${JSON.stringify(req.type)}`);
      const projectId = req.projectId.trim() === "" ? null : req.projectId.trim();
      const key = await admin.createApiKey(req.type, projectId);
      return create(CreateApiKeyResponseSchema, { ...key, projectId: key.projectId ?? "" });
    },

    async revokeApiKey(req) {
      const keyId = requiredText("key_id", req.keyId);
      const revokedAt = await admin.revokeApiKey(keyId);
      return create(RevokeApiKeyResponseSchema, { keyId, revokedAt: timestampFromDate(revokedAt) });
    },

    async setEntitlement(req) {
      const entitlement = {
        platformUserId: canonicalUuid(req.platformUserId),
        gameId: req.gameId,
        // A record of ownership is what a caller usually means; a refund says owns: false.
        owns: req.owns ?? true,
        source: req.source.trim() || "STORE",
        channelId: req.channelId.trim(),
        buildVersion: req.buildVersion.trim(),
      };
      await admin.setEntitlement(entitlement);
      const { platformUserId, ...ownership } = entitlement;
      return create(SetEntitlementResponseSchema, {
        platformUserId,
        entitlement: create(EntitlementSchema, ownership),
      });
    },

    async rotateSigningKey() {
      const key = await keyring.rotate();
      return create(RotateSigningKeyResponseSchema, { kid: key.kid, createdAt: timestampFromDate(key.createdAt) });
    },
  };
}
