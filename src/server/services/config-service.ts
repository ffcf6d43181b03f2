import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  ConfigVersionSchema,
  DeleteEntryResponseSchema,
  EvaluateResponseSchema,
  ListEntriesResponseSchema,
  ListVersionsResponseSchema,
  RestoreVersionResponseSchema,
  UpdateEntryResponseSchema,
  type ConfigService,
} from "../../../gen/platformapi/v1/config_pb.js";
import type { ConfigCapability } from "../../config/capability.js";
import type { VersionRecord } from "../../config/config-entries.js";
import { callerOf, projectOf } from "../calls/caller.js";
import { protoKeyPaths } from "../http/protocol.js";
import { configMessages, entryInput, entryMessage } from "./config-requests.js";
import { pageInfo, paging } from "./paging.js";
import { getIdentity } from "./player-requests.js";

/** The key that makes a change: each version records it. */
const keyIdOf = (ctx: HandlerContext) => callerOf(ctx).keyId;

/** ConfigService: entries, their versions, and what a player gets now. */
export function createConfigService({ entries, evaluation }: ConfigCapability): ServiceImpl<typeof ConfigService> {
  return {
    async updateEntry(req, ctx) {
      const input = entryInput(req, ctx.values.get(protoKeyPaths));
      const record = await entries.update(projectOf(ctx), input, keyIdOf(ctx));
      return create(UpdateEntryResponseSchema, { entry: entryMessage(record) });
    },

    async listEntries(req, ctx) {
      const page = paging(req);
      const { items, total } = await entries.list(projectOf(ctx), page);
      return create(ListEntriesResponseSchema, {
        entries: items.map(entryMessage),
        entriesInfo: pageInfo(total, page),
      });
    },

    async listVersions(req, ctx) {
      const page = paging(req);
      const { versions, total } = await entries.history(projectOf(ctx), req.key, page);
      return create(ListVersionsResponseSchema, {
        versions: versions.map(versionMessage),
        versionsInfo: pageInfo(total, page),
      });
    },

    async restoreVersion(req, ctx) {
      const record = await entries.restore(projectOf(ctx), req.key, req.version, keyIdOf(ctx));
      return create(RestoreVersionResponseSchema, { entry: entryMessage(record) });
    },

    async deleteEntry(req, ctx) {
      const version = await entries.delete(projectOf(ctx), req.key, keyIdOf(ctx));
      return create(DeleteEntryResponseSchema, { version });
    },

    async evaluate(req, ctx) {
      // A key that may change the project (the private key) records exposures; a reader key only reads.
      const records = callerOf(ctx).scopes.includes("players:manage");
      const keys = req.keys.length > 0 ? [...new Set(req.keys)] : undefined;
      const answer = await evaluation.evaluate(projectOf(ctx), getIdentity(req), keys, records);
      return create(EvaluateResponseSchema, {
        config: configMessages(answer.config),
        experiments: Object.fromEntries(answer.experiments),
        version: answer.version,
      });
    },
  };
}

/** A version's message: its entry as that change left it (null: the change deleted it). */
const versionMessage = (record: VersionRecord) =>
  create(ConfigVersionSchema, {
    version: record.version,
    entry:
      record.entry === null
        ? undefined
        : entryMessage({ entry: record.entry, version: record.version, updatedAt: record.updatedAt }),
    updatedAt: timestampFromDate(record.updatedAt),
    keyId: record.keyId,
  });
