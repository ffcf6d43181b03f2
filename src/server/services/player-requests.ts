import { toJson } from "@bufbuild/protobuf";
import { ValueSchema, type ListValue } from "@bufbuild/protobuf/wkt";
import type {
  GetRequest,
  ListTagsRequest,
  PlayerUpdate,
  SearchRequest,
  UpdateTagRequest,
  UpdateTraitRequest,
} from "../../../gen/platformapi/v1/players_pb.js";
import { InvalidArgumentError } from "../../errors.js";
import { cohortFilter, filterTags } from "../../events/reads/query.js";
import { escapeRegex, normaliseTraitKey } from "../../players/rules/normalise.js";
import type { UpdateEntry } from "../../players/players.js";
import { profileQueryOf, type ProfileQuery } from "../../players/rules/profile-match.js";
import type { TagMetadata } from "../../players/storage/tag-store.js";
import { withProtoKey } from "./proto-keys.js";

/**
 * PlayerService requests into domain values. The proto's buf.validate rules
 * (lengths, counts, paging bounds, exactly one identity) have been checked by
 * the time these run; what is left is what a proto cannot state: defaults,
 * trimming, and normalising tags and traits like writes.
 */

function invalid(message: string): InvalidArgumentError {
  return new InvalidArgumentError(message);
}

/** An identity field: "" counts as not sent. */
const identity = (value: string | undefined): string | undefined => (value === "" ? undefined : value);

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

export function updateEntries(players: readonly PlayerUpdate[], protoKeys: ReadonlySet<string>): UpdateEntry[] {
  return players.map((player, i) => {
    const restore = <V>(object: Readonly<Record<string, V>>, field: string, placeholder: V) =>
      withProtoKey(object, `players[${i}].${field}`, protoKeys, placeholder);
    return {
      partnerUserId: identity(player.partnerUserId),
      deviceId: identity(player.deviceId),
      tags: player.tags ? listItems(player.tags) : undefined,
      tagsAdd: player.tagsAdd,
      tagsRemove: player.tagsRemove,
      traits: player.traits && restore(player.traits, "traits", null),
      traitsOnce: player.traitsOnce && restore(player.traitsOnce, "traits_once", null),
      traitsIncrement: restore(player.traitsIncrement, "traits_increment", 0),
      traitsUnset: player.traitsUnset,
    };
  });
}

/** The proto's oneof rule leaves exactly one of the two set. */
export function getIdentity(
  req: Pick<GetRequest, "partnerUserId" | "deviceId">,
): { partnerUserId: string } | { deviceId: string } {
  return req.partnerUserId !== "" ? { partnerUserId: req.partnerUserId } : { deviceId: req.deviceId };
}

/** The filters of search and export: the one reading of every read's cohort filters (events/reads/query.ts). */
export function searchQuery(
  req: Pick<SearchRequest, "tags" | "tagsMatch" | "tagsNone" | "traits" | "experiment" | "variants">,
  protoKeys: ReadonlySet<string>,
): ProfileQuery {
  return profileQueryOf(
    cohortFilter({ ...req, traits: req.traits && withProtoKey(req.traits, "traits", protoKeys, null) }),
  );
}

/** `text` becomes an escaped pattern: user text never acts as a regular expression. A category of "" means uncategorised tags. */
export function tagQuery(req: ListTagsRequest): { textPattern?: string; category?: string | null } {
  const query: { textPattern?: string; category?: string | null } = {};
  if (req.text.trim() !== "") query.textPattern = escapeRegex(req.text.trim());
  if (req.category !== undefined) query.category = req.category.trim() === "" ? null : req.category.trim();
  return query;
}

/** The trait key to materialise (`materialise: true` is a rule of the proto). */
export function traitUpdate(req: UpdateTraitRequest): string {
  const key = normaliseTraitKey(req.key);
  if (!key.ok) throw invalid(`key: ${JSON.stringify(req.key)} is not a valid trait key (${key.error})`);
  return key.value;
}

export function tagUpdate(req: UpdateTagRequest): { tag: string; metadata: TagMetadata } {
  const [tag] = filterTags("tag", [req.tag]);
  const metadata: TagMetadata = {};
  if (req.label !== undefined) {
    const label = req.label.trim();
    if (label === "") throw invalid("label: must not be blank");
    metadata.label = label;
  }
  if (req.category !== undefined) metadata.category = req.category.trim() === "" ? null : req.category.trim();
  if (req.description !== undefined) metadata.description = req.description === "" ? null : req.description;
  if (req.isHidden !== undefined) metadata.isHidden = req.isHidden;
  return { tag, metadata };
}
