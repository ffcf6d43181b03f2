import { toJson, type JsonObject } from "@bufbuild/protobuf";
import { ValueSchema, type ListValue } from "@bufbuild/protobuf/wkt";
import type {
  ListTagsRequest,
  PlayerUpdate,
  SearchRequest,
  UpdateTagRequest,
  UpdateTraitRequest,
} from "../../../gen/platformapi/v1/players_pb.js";
import { InvalidArgumentError } from "../../errors.js";
import {
  escapeRegex,
  normaliseTag,
  normaliseTraitKey,
  normaliseTraitValue,
  traitIndexEntry,
} from "../../players/normalise.js";
import type { UpdateEntry } from "../../players/players.js";
import type { ProfileQuery, TagMetadata } from "../../players/store.js";

/** Validation of PlayerService requests: proto messages in, domain values out, invalid_argument naming the field. */

export const MAX_ENTRIES_PER_UPDATE = 100;
export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;
const MAX_ID_CHARS = 256;
const MAX_TEXT_CHARS = 200;

function invalid(message: string): InvalidArgumentError {
  return new InvalidArgumentError(message);
}

/** An identity field: "" counts as not sent. */
function identity(field: string, value: string | undefined): string | undefined {
  if (value === undefined || value === "") return undefined;
  if (value.length > MAX_ID_CHARS) throw invalid(`${field}: at most ${MAX_ID_CHARS} characters`);
  return value;
}

/** The ListValue items as plain JSON values; non-strings are kept so that they can be reported as dropped. */
function listItems(list: ListValue): unknown[] {
  return list.values.map((value) => {
    if (value.kind.case === "stringValue") return value.kind.value;
    try {
      return toJson(ValueSchema, value);
    } catch {
      return String(value.kind.value);
    }
  });
}

export function updateEntries(players: readonly PlayerUpdate[]): UpdateEntry[] {
  if (players.length > MAX_ENTRIES_PER_UPDATE) {
    throw invalid(`players: at most ${MAX_ENTRIES_PER_UPDATE} entries a call, got ${players.length}`);
  }
  return players.map((player, i) => ({
    partnerUserId: identity(`players[${i}].partner_user_id`, player.partnerUserId),
    deviceId: identity(`players[${i}].device_id`, player.deviceId),
    tags: player.tags ? listItems(player.tags) : undefined,
    tagsAdd: player.tagsAdd,
    tagsRemove: player.tagsRemove,
    traits: player.traits,
    traitsOnce: player.traitsOnce,
    traitsIncrement: player.traitsIncrement,
    traitsUnset: player.traitsUnset,
  }));
}

export function getIdentity(req: {
  partnerUserId: string;
  deviceId: string;
}): { partnerUserId: string } | { deviceId: string } {
  const partnerUserId = identity("partner_user_id", req.partnerUserId);
  const deviceId = identity("device_id", req.deviceId);
  if ((partnerUserId === undefined) === (deviceId === undefined)) {
    throw invalid("partner_user_id: give exactly one of partner_user_id and device_id");
  }
  return partnerUserId !== undefined ? { partnerUserId } : { deviceId: deviceId! };
}

function filterTag(field: string, raw: string): string {
  const tag = normaliseTag(raw);
  if (!tag.ok) throw invalid(`${field}: ${JSON.stringify(raw)} is not a valid tag (${tag.error})`);
  return tag.value;
}

/** Filter tags and traits are normalised like writes, so "Team A" finds team_a. */
export function searchQuery(req: SearchRequest): ProfileQuery {
  const tagsMatch = req.tagsMatch === "" ? "any" : req.tagsMatch;
  if (tagsMatch !== "any" && tagsMatch !== "all") throw invalid('tags_match: must be "any" or "all"');
  const tags = [...new Set(req.tags.map((tag) => filterTag("tags", tag)))];
  const query: ProfileQuery = {};
  if (tags.length > 0) query[tagsMatch === "any" ? "tagsAny" : "tagsAll"] = tags;
  const traits = traitFilter(req.traits);
  if (traits.length > 0) query.traits = traits;
  return query;
}

function traitFilter(traits: JsonObject | undefined): string[] {
  return Object.entries(traits ?? {}).map(([rawKey, rawValue]) => {
    const key = normaliseTraitKey(rawKey);
    if (!key.ok) throw invalid(`traits: ${JSON.stringify(rawKey)} is not a valid trait key (${key.error})`);
    const value = normaliseTraitValue(rawValue);
    if (!value.ok) throw invalid(`traits: the value of ${JSON.stringify(rawKey)} must be a string, number or boolean`);
    return traitIndexEntry(key.value, value.value);
  });
}

/** `required`: ListTags needs a page; Search defaults to 1. */
export function paging(req: { page: number; pageSize: number }, required: boolean): { page: number; pageSize: number } {
  if (req.page < 0 || (required && req.page === 0)) throw invalid(`page: ${required ? "required, " : ""}from 1`);
  if (req.pageSize < 0 || req.pageSize > MAX_PAGE_SIZE) throw invalid(`page_size: from 1 to ${MAX_PAGE_SIZE}`);
  return { page: req.page === 0 ? 1 : req.page, pageSize: req.pageSize === 0 ? DEFAULT_PAGE_SIZE : req.pageSize };
}

/** `text` becomes an escaped pattern: user text never acts as a regular expression. A category of "" means uncategorised tags. */
export function tagQuery(req: ListTagsRequest): { textPattern?: string; category?: string | null } {
  if (req.text.length > MAX_TEXT_CHARS) throw invalid(`text: at most ${MAX_TEXT_CHARS} characters`);
  const query: { textPattern?: string; category?: string | null } = {};
  if (req.text.trim() !== "") query.textPattern = escapeRegex(req.text.trim());
  if (req.category !== undefined) query.category = req.category.trim() === "" ? null : req.category.trim();
  return query;
}

/** The trait key to materialise; `materialise` must be true (a materialised key stays so). */
export function traitUpdate(req: UpdateTraitRequest): string {
  const key = normaliseTraitKey(req.key);
  if (!key.ok) throw invalid(`key: ${JSON.stringify(req.key)} is not a valid trait key (${key.error})`);
  if (!req.materialise) throw invalid("materialise: must be true (a materialised key stays materialised)");
  return key.value;
}

export function tagUpdate(req: UpdateTagRequest): { tag: string; metadata: TagMetadata } {
  const tag = filterTag("tag", req.tag);
  const metadata: TagMetadata = {};
  if (req.label !== undefined) {
    const label = req.label.trim();
    if (label === "") throw invalid("label: must not be empty");
    if (label.length > MAX_TEXT_CHARS) throw invalid(`label: at most ${MAX_TEXT_CHARS} characters`);
    metadata.label = label;
  }
  if (req.category !== undefined) {
    const category = req.category.trim();
    if (category.length > 64) throw invalid("category: at most 64 characters");
    metadata.category = category === "" ? null : category;
  }
  if (req.description !== undefined) {
    if (req.description.length > 1000) throw invalid("description: at most 1000 characters");
    metadata.description = req.description === "" ? null : req.description;
  }
  if (req.isHidden !== undefined) metadata.isHidden = req.isHidden;
  return { tag, metadata };
}
