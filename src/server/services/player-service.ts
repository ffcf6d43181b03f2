import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  DataResponseSchema,
  DeleteResponseSchema,
  DroppedItemSchema,
  ExportResponseSchema,
  KeptEventSchema,
  GetResponseSchema,
  LinkResponseSchema,
  ListTagsResponseSchema,
  ListTraitsResponseSchema,
  PlayerProfileSchema,
  RejectedEntrySchema,
  SearchResponseSchema,
  TagRecordSchema,
  TraitRecordSchema,
  UpdatedPlayerSchema,
  UpdateResponseSchema,
  UpdateTagResponseSchema,
  type UpdateResponse,
  UpdateTraitResponseSchema,
  type PlayerService,
} from "../../../gen/platformapi/v1/players_pb.js";
import { NotFoundError } from "../../errors.js";
import type { KeptEvents } from "../../events/kept-events.js";
import type { QueuedEvent } from "../../events/queue/entries.js";
import type { LaunchTokens } from "../../launch/launch-tokens.js";
import type { AppliedEntry, Players, UpdateAnswer, UpdateEntry } from "../../players/players.js";
import type { ProfileRecord } from "../../players/rules/profile.js";
import type { TagRecord } from "../../players/search.js";
import { callerOf, projectOf } from "../calls/caller.js";
import { protoKeyPaths } from "../http/protocol.js";
import { canonicalUuid, requiredText } from "../calls/validate.js";
import { getIdentity, searchQuery, tagQuery, tagUpdate, traitUpdate, updateEntries } from "./player-requests.js";
import { pageInfo, paging } from "./paging.js";

const optional = (value: string | null) => value ?? undefined;

/** Who the player is and their tags: what a profile and an update answer share. */
function identityFields(profile: Omit<AppliedEntry, "dropped">) {
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

/** A raw event as it was accepted; its properties are the JSON text the queue keeps. */
function keptEventMessage(event: QueuedEvent) {
  return create(KeptEventSchema, {
    name: event.n,
    partnerUserId: optional(event.u),
    deviceId: optional(event.d),
    timestamp: timestampFromDate(event.t),
    ...(event.p !== null && { properties: JSON.parse(event.p) as JsonObject }),
    eventId: optional(event.i),
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

/** Applied entries in `updated`, rejected ones in `rejected`, each in request order. */
function updateResponse(entries: readonly UpdateEntry[], { outcomes, serverTime }: UpdateAnswer) {
  const response = create(UpdateResponseSchema, { success: true, serverTime: timestampFromDate(serverTime) });
  outcomes.forEach((outcome, index) => {
    if (outcome.ok) {
      const { dropped, ...player } = outcome.value;
      response.updated.push(
        create(UpdatedPlayerSchema, {
          ...identityFields(player),
          dropped: dropped.map((item) => create(DroppedItemSchema, item)),
        }),
      );
    } else {
      response.rejected.push(
        create(RejectedEntrySchema, {
          index,
          partnerUserId: entries[index].partnerUserId,
          deviceId: entries[index].deviceId,
          code: outcome.error.code,
          message: outcome.error.message,
        }),
      );
    }
  });
  return response;
}

/**
 * The answer for a caller that may not read players (the public key, which ships in game clients, lacks
 * events:read): what happened to each entry, applied (with its dropped items) or rejected, and of who the player is
 * only the ids the entry sent. The player's tags, identity key, platform user and link are left at their defaults.
 */
function withoutPlayerData(answer: UpdateResponse, entries: readonly UpdateEntry[]): UpdateResponse {
  const rejected = new Set(answer.rejected.map((entry) => entry.index));
  const applied = entries.filter((_, index) => !rejected.has(index));
  return create(UpdateResponseSchema, {
    ...answer,
    updated: answer.updated.map(({ dropped }, i) =>
      create(UpdatedPlayerSchema, { partnerUserId: applied[i].partnerUserId, deviceId: applied[i].deviceId, dropped }),
    ),
  });
}

export interface PlayerServiceOptions {
  players: Players;
  /** Link (partner id of a platform user) belongs to launch tokens: verify answers with it. */
  launchTokens: LaunchTokens;
  /** Raw events belong to the event queue: one player's still kept, a page at a time. */
  keptEvents: KeptEvents;
}

/** PlayerService: tags and traits (update, get, search, tag and trait listings, tag metadata, materialisation) and Link. */
export function createPlayerService({
  players,
  launchTokens,
  keptEvents,
}: PlayerServiceOptions): ServiceImpl<typeof PlayerService> {
  return {
    async update(req, ctx) {
      const entries = updateEntries(req.players, ctx.values.get(protoKeyPaths));
      const answer = updateResponse(entries, await players.update(projectOf(ctx), entries, req.requestId || undefined));
      // A replayed answer is the whole one too: what a caller may read of it is decided for each call.
      return callerOf(ctx).scopes.includes("events:read") ? answer : withoutPlayerData(answer, entries);
    },

    async get(req, ctx) {
      const profile = await players.get(projectOf(ctx), getIdentity(req));
      return create(GetResponseSchema, profile ? { found: true, profile: profileMessage(profile) } : { found: false });
    },

    async delete(req, ctx) {
      return create(DeleteResponseSchema, await players.delete(projectOf(ctx), getIdentity(req)));
    },

    async *data(req, ctx) {
      const projectId = projectOf(ctx);
      const { profile, identityKeys } = await players.keysOf(projectId, getIdentity(req));
      yield create(DataResponseSchema, profile ? { record: { case: "profile", value: profileMessage(profile) } } : {});
      for await (const events of keptEvents.batches(projectId, identityKeys)) {
        for (const event of events) {
          yield create(DataResponseSchema, { record: { case: "event", value: keptEventMessage(event) } });
        }
      }
    },

    async search(req, ctx) {
      const projectId = projectOf(ctx);
      const query = searchQuery(req, ctx.values.get(protoKeyPaths));
      const page = paging(req);
      const { profiles, total } = await players.search(projectId, query, page.page, page.pageSize);
      return create(SearchResponseSchema, {
        players: profiles.map(profileMessage),
        playersInfo: pageInfo(total, page),
      });
    },

    async *export(req, ctx) {
      const profiles = players.export(projectOf(ctx), searchQuery(req, ctx.values.get(protoKeyPaths)));
      for await (const profile of profiles) yield create(ExportResponseSchema, { player: profileMessage(profile) });
    },

    async listTags(req, ctx) {
      const projectId = projectOf(ctx);
      const page = paging(req);
      const { tags, total, categories } = await players.listTags(projectId, tagQuery(req), page.page, page.pageSize);
      return create(ListTagsResponseSchema, {
        tags: tags.map(tagMessage),
        tagsInfo: pageInfo(total, page),
        categories,
      });
    },

    async updateTag(req, ctx) {
      const projectId = projectOf(ctx);
      const { tag, metadata } = tagUpdate(req);
      const record = await players.updateTag(projectId, tag, metadata);
      if (!record) throw new NotFoundError(`tag: the project has no tag ${tag}`);
      return create(UpdateTagResponseSchema, { tag: tagMessage(record) });
    },

    async listTraits(req, ctx) {
      const projectId = projectOf(ctx);
      const page = paging(req);
      const { keys, total } = await players.listTraitKeys(projectId, page.page, page.pageSize);
      const states = await players.traitMaterialisation(projectId, keys);
      return create(ListTraitsResponseSchema, {
        traits: keys.map((key, i) => create(TraitRecordSchema, { key, ...states[i] })),
        traitsInfo: pageInfo(total, page),
      });
    },

    async updateTrait(req, ctx) {
      const key = traitUpdate(req);
      const outcome = await players.materialiseTrait(projectOf(ctx), key);
      if (!outcome) throw new NotFoundError(`key: the project has no trait key ${key}`);
      return create(UpdateTraitResponseSchema, { key, materialised: true, ready: outcome.ready });
    },

    async link(req, ctx) {
      const platformUserId = canonicalUuid(req.platformUserId);
      const partnerUserId = requiredText("partner_user_id", req.partnerUserId);
      await launchTokens.link(projectOf(ctx), platformUserId, partnerUserId);
      return create(LinkResponseSchema, { platformUserId, partnerUserId });
    },
  };
}
