import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { PageInfoSchema } from "../../gen/platformapi/v1/common_pb.js";
import {
  DroppedItemSchema,
  GetResponseSchema,
  ListTagsResponseSchema,
  PlayerProfileSchema,
  RejectedEntrySchema,
  SearchResponseSchema,
  TagRecordSchema,
  UpdatedPlayerSchema,
  UpdateResponseSchema,
  UpdateTagResponseSchema,
  type PlayerService,
} from "../../gen/platformapi/v1/players_pb.js";
import type { Database } from "../db/database.js";
import { projectOf } from "../server/caller.js";
import type { LaunchVerified } from "../launch/launch-tokens.js";
import { ContentionError, Players } from "./players.js";
import { getIdentity, paging, searchQuery, tagQuery, tagUpdate, updateEntries } from "./requests.js";
import { PlayerStore, type ProfileRecord, type TagRecord } from "./store.js";

/** PlayerService minus Link, which the launch capability provides. */
export type PlayerServiceImpl = Omit<ServiceImpl<typeof PlayerService>, "link">;

export interface PlayersCapability {
  service: PlayerServiceImpl;
  /** The launch-verify hook: links the installation to the verified user and folds its device profile. */
  onLaunchVerified(event: LaunchVerified): Promise<void>;
}

export async function createPlayers({
  database,
  now,
}: {
  database: Database;
  now: () => Date;
}): Promise<PlayersCapability> {
  const store = new PlayerStore(database.db, database.isFerretDb);
  await store.createIndexes();
  const players = new Players(store, now);
  return { service: createPlayerService(players, now), onLaunchVerified: (event) => players.onLaunchVerified(event) };
}

const optional = (value: string | null) => value ?? undefined;
const pageInfo = (total: number, page: number, pageSize: number) =>
  create(PageInfoSchema, { total, pages: Math.ceil(total / pageSize), page });

/** Who the player is and their tags: what a profile and an update answer share. */
function identityFields(profile: ProfileRecord) {
  return {
    identityKey: profile.identityKey,
    partnerUserId: optional(profile.partnerUserId),
    deviceId: optional(profile.deviceId),
    platformUserId: optional(profile.platformUserId),
    linked: profile.platformUserId !== null,
    tags: profile.tags,
  };
}

function profileMessage(profile: ProfileRecord) {
  return create(PlayerProfileSchema, {
    ...identityFields(profile),
    traits: Object.fromEntries(profile.traits),
    firstSeenAt: timestampFromDate(profile.firstSeenAt),
    lastSeenAt: timestampFromDate(profile.lastSeenAt),
  });
}

function tagMessage(tag: TagRecord) {
  return create(TagRecordSchema, {
    id: tag.id,
    tag: tag.tag,
    label: tag.label,
    category: optional(tag.category),
    description: optional(tag.description),
    isHidden: tag.isHidden,
    playersCount: tag.playersCount,
    firstSeenAt: timestampFromDate(tag.firstSeenAt),
    lastSeenAt: timestampFromDate(tag.lastSeenAt),
  });
}

function createPlayerService(players: Players, now: () => Date): PlayerServiceImpl {
  return {
    async update(req, ctx) {
      const projectId = projectOf(ctx);
      const entries = updateEntries(req.players);
      let outcomes;
      try {
        outcomes = await players.update(projectId, entries);
      } catch (error) {
        if (error instanceof ContentionError) throw new ConnectError(error.message, Code.Aborted);
        throw error;
      }
      const response = create(UpdateResponseSchema, { success: true, serverTime: timestampFromDate(now()) });
      outcomes.forEach((outcome, index) => {
        if (outcome.applied) {
          const { profile } = outcome;
          response.updated.push(
            create(UpdatedPlayerSchema, {
              ...identityFields(profile),
              dropped: outcome.dropped.map((item) => create(DroppedItemSchema, item)),
            }),
          );
        } else {
          response.rejected.push(
            create(RejectedEntrySchema, {
              index,
              partnerUserId: entries[index].partnerUserId,
              deviceId: entries[index].deviceId,
              code: outcome.code,
              message: outcome.message,
            }),
          );
        }
      });
      return response;
    },

    async get(req, ctx) {
      const profile = await players.get(projectOf(ctx), getIdentity(req));
      return create(GetResponseSchema, profile ? { found: true, profile: profileMessage(profile) } : { found: false });
    },

    async search(req, ctx) {
      const projectId = projectOf(ctx);
      const query = searchQuery(req);
      const { page, pageSize } = paging(req, false);
      const { profiles, total } = await players.search(projectId, query, page, pageSize);
      return create(SearchResponseSchema, {
        players: profiles.map(profileMessage),
        playersInfo: pageInfo(total, page, pageSize),
      });
    },

    async listTags(req, ctx) {
      const projectId = projectOf(ctx);
      const { page, pageSize } = paging(req, true);
      const { tags, total, categories } = await players.listTags(projectId, tagQuery(req), page, pageSize);
      return create(ListTagsResponseSchema, {
        tags: tags.map(tagMessage),
        tagsInfo: pageInfo(total, page, pageSize),
        categories,
      });
    },

    async updateTag(req, ctx) {
      const projectId = projectOf(ctx);
      const { tag, metadata } = tagUpdate(req);
      const record = await players.updateTag(projectId, tag, metadata);
      if (!record) throw new ConnectError(`tag: the project has no tag ${tag}`, Code.NotFound);
      return create(UpdateTagResponseSchema, { tag: tagMessage(record) });
    },
  };
}
