import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type AdminService,
  CreateApiKeyResponseSchema,
  ApiKeyRecordSchema,
  CreateProjectResponseSchema,
  ListApiKeysResponseSchema,
  ListEntitlementsResponseSchema,
  ListProjectsResponseSchema,
  ProjectSchema,
  RevokeApiKeyResponseSchema,
  RotateSigningKeyResponseSchema,
  SetEntitlementResponseSchema,
  UserEntitlementSchema,
  ListParkedSegmentsResponseSchema,
  ParkedSegmentSchema,
  RetryParkedSegmentResponseSchema,
} from "../../../gen/platformapi/v1/admin_pb.js";
import type { ParkedSegments } from "../../events/queue/parked-segments.js";
import { EntitlementSchema } from "../../../gen/platformapi/v1/launch_pb.js";
import type { Admin, Entitlement } from "../../admin/admin.js";
import { isApiKeyType } from "../../admin/api-keys.js";
import { InvalidArgumentError } from "../../errors.js";
import type { Keyring } from "../../launch/keyring.js";
import { canonicalUuid, requiredText } from "../calls/validate.js";
import { pageInfo, paging } from "./paging.js";

const entitlementMessage = ({ owns, source, gameId, channelId, buildVersion }: Entitlement) =>
  create(EntitlementSchema, { owns, source, gameId, channelId, buildVersion });

/**
 * AdminService: projects, API keys, entitlements, rotation of the launch-token signing key, and the event segments
 * parked.
 */
export function createAdminService(
  admin: Admin,
  keyring: Keyring,
  parked: ParkedSegments,
): ServiceImpl<typeof AdminService> {
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
      return create(SetEntitlementResponseSchema, {
        platformUserId: entitlement.platformUserId,
        entitlement: entitlementMessage(entitlement),
      });
    },

    async rotateSigningKey() {
      const key = await keyring.rotate();
      return create(RotateSigningKeyResponseSchema, { kid: key.kid, createdAt: timestampFromDate(key.createdAt) });
    },

    async listProjects(req) {
      const page = paging(req);
      const { items, total } = await admin.listProjects(page);
      return create(ListProjectsResponseSchema, {
        projects: items.map((project) => create(ProjectSchema, project)),
        projectsInfo: pageInfo(total, page),
      });
    },

    async listApiKeys(req) {
      const page = paging(req);
      const projectId = req.projectId.trim() === "" ? undefined : req.projectId.trim();
      const { items, total } = await admin.listApiKeys(projectId, page);
      const apiKeys = items.map((key) =>
        create(ApiKeyRecordSchema, {
          ...key,
          projectId: key.projectId ?? "",
          createdAt: timestampFromDate(key.createdAt),
          revokedAt: key.revokedAt ? timestampFromDate(key.revokedAt) : undefined,
        }),
      );
      return create(ListApiKeysResponseSchema, { apiKeys, apiKeysInfo: pageInfo(total, page) });
    },

    async listEntitlements(req) {
      const page = paging(req);
      const of = {
        platformUserId: req.platformUserId === undefined ? undefined : canonicalUuid(req.platformUserId),
        gameId: req.gameId,
      };
      const { items, total } = await admin.listEntitlements(of, page);
      const entitlements = items.map((record) =>
        create(UserEntitlementSchema, {
          platformUserId: record.platformUserId,
          entitlement: entitlementMessage(record),
          updatedAt: timestampFromDate(record.updatedAt),
        }),
      );
      return create(ListEntitlementsResponseSchema, { entitlements, entitlementsInfo: pageInfo(total, page) });
    },

    async listParkedSegments(req) {
      const projectId = req.projectId.trim() === "" ? undefined : req.projectId.trim();
      const segments = (await parked.list(projectId)).map(({ projectId, seq, events, error, at }) =>
        create(ParkedSegmentSchema, { projectId, seq: BigInt(seq), events, error, parkedAt: timestampFromDate(at) }),
      );
      return create(ListParkedSegmentsResponseSchema, { segments });
    },

    async retryParkedSegment(req) {
      const seq = await parked.retry(requiredText("project_id", req.projectId), Number(req.seq));
      return create(RetryParkedSegmentResponseSchema, { seq: BigInt(seq) });
    },
  };
}
