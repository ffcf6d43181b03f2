import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type AdminService,
  CreateApiKeyResponseSchema,
  CreateProjectResponseSchema,
  ProjectSchema,
  RevokeApiKeyResponseSchema,
  SetEntitlementResponseSchema,
} from "../../gen/platformapi/v1/admin_pb.js";
import { EntitlementSchema } from "../../gen/platformapi/v1/launch_pb.js";
import type { ApiKeyCache } from "./api-key-cache.js";
import {
  SCOPES_BY_TYPE,
  generateApiKey,
  hashApiKey,
  isApiKeyType,
  isProjectKeyType,
  type ApiKeyType,
} from "./api-keys.js";
import { DuplicateGameError, type AdminStore } from "./store.js";
import { requireGameId, requireText, requireUuid } from "../validate.js";

export interface AdminServiceDeps {
  store: AdminStore;
  /** The authenticator's cache, told of each revocation. */
  apiKeys: ApiKeyCache;
  now: () => Date;
}

/** AdminService minus RotateSigningKey, which the launch capability provides. */
export type AdminServiceImpl = Omit<ServiceImpl<typeof AdminService>, "rotateSigningKey">;

export function createAdminService({ store, apiKeys, now }: AdminServiceDeps): AdminServiceImpl {
  async function issueKey(type: ApiKeyType, projectId: string | null) {
    const { keyId, key } = generateApiKey(type);
    const scopes = [...SCOPES_BY_TYPE[type]];
    await store.insertApiKey({ keyId, type, scopes, projectId, hash: hashApiKey(key) }, now());
    return { keyId, key, type, scopes, projectId: projectId ?? "" };
  }

  return {
    async createProject(req) {
      const name = requireText("name", req.name, 200);
      const gameId = requireGameId(req.gameId);
      const projectId = `prj_${randomBytes(9).toString("base64url")}`;
      try {
        await store.insertProject({ projectId, name, gameId }, now());
      } catch (error) {
        if (error instanceof DuplicateGameError) {
          throw new ConnectError(`game_id ${gameId} already belongs to a project`, Code.AlreadyExists);
        }
        throw error;
      }
      const privateKey = await issueKey("private", projectId);
      const publicKey = await issueKey("public", projectId);
      return create(CreateProjectResponseSchema, {
        project: create(ProjectSchema, { projectId, name, gameId }),
        privateKey: privateKey.key,
        publicKey: publicKey.key,
      });
    },

    async createApiKey(req) {
      if (!isApiKeyType(req.type)) {
        throw new ConnectError("type: must be one of private, public, platform, admin", Code.InvalidArgument);
      }
      let projectId: string | null = null;
      if (isProjectKeyType(req.type)) {
        projectId = requireText("project_id", req.projectId, 100);
        if (!(await store.findProject(projectId))) {
          throw new ConnectError(`project_id: no project ${projectId}`, Code.NotFound);
        }
      } else if (req.projectId !== "") {
        throw new ConnectError(`project_id: ${req.type} keys belong to no project`, Code.InvalidArgument);
      }
      return create(CreateApiKeyResponseSchema, await issueKey(req.type, projectId));
    },

    async revokeApiKey(req) {
      const keyId = requireText("key_id", req.keyId, 100);
      let revokedAt: Date | null;
      try {
        revokedAt = await store.revokeApiKey(keyId, now());
      } finally {
        // Also when the store failed after its write: a key that may be revoked must not stay cached.
        apiKeys.forget(keyId);
      }
      if (!revokedAt) throw new ConnectError(`key_id: no key ${keyId}`, Code.NotFound);
      return create(RevokeApiKeyResponseSchema, { keyId, revokedAt: timestampFromDate(revokedAt) });
    },

    async setEntitlement(req) {
      const platformUserId = requireUuid("platform_user_id", req.platformUserId);
      const gameId = requireGameId(req.gameId);
      const entitlement = {
        owns: req.owns,
        source: req.source === "" ? "STORE" : requireText("source", req.source, 50),
        gameId,
        channelId: req.channelId,
        buildVersion: req.buildVersion,
      };
      await store.upsertEntitlement({ platformUserId, ...entitlement, updatedAt: now() });
      return create(SetEntitlementResponseSchema, {
        platformUserId,
        entitlement: create(EntitlementSchema, entitlement),
      });
    },
  };
}
