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
import { requireGameId, requireText, requireUuid } from "../validate.js";

/** AdminService: projects, API keys, entitlements, and rotation of the launch-token signing key. */
export function createAdminService(admin: Admin, keyring: Keyring): ServiceImpl<typeof AdminService> {
  return {
    async createProject(req) {
      const { project, privateKey, publicKey } = await admin.createProject(
        requireText("name", req.name, 200),
        requireGameId(req.gameId),
      );
      return create(CreateProjectResponseSchema, { project: create(ProjectSchema, project), privateKey, publicKey });
    },

    async createApiKey(req) {
      if (!isApiKeyType(req.type)) {
        throw new InvalidArgumentError("type: must be one of private, public, platform, admin");
      }
      const projectId = req.projectId === "" ? null : requireText("project_id", req.projectId, 100);
      const key = await admin.createApiKey(req.type, projectId);
      return create(CreateApiKeyResponseSchema, { ...key, projectId: key.projectId ?? "" });
    },

    async revokeApiKey(req) {
      const keyId = requireText("key_id", req.keyId, 100);
      const revokedAt = await admin.revokeApiKey(keyId);
      return create(RevokeApiKeyResponseSchema, { keyId, revokedAt: timestampFromDate(revokedAt) });
    },

    async setEntitlement(req) {
      const entitlement = {
        platformUserId: requireUuid("platform_user_id", req.platformUserId),
        gameId: requireGameId(req.gameId),
        owns: req.owns,
        source: req.source === "" ? "STORE" : requireText("source", req.source, 50),
        channelId: req.channelId,
        buildVersion: req.buildVersion,
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
