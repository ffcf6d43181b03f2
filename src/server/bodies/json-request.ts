import { ScalarType, type DescField, type DescMessage, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { EventSchema } from "../../../gen/platformapi/v1/events_pb.js";
import { fail, ok, type Result } from "../../errors.js";
import { isNullWhenUnset } from "./json-nulls.js";
import { readableRfc3339 } from "../calls/rfc3339.js";
import { decodeUtf8Body, INVALID_UTF8_BODY } from "./unicode.js";

/**
 * The checks of a /v1 request body before it becomes a message: its
 * Content-Type, its UTF-8, its JSON, and what protobuf-es's JSON reader
 * would otherwise let through or lose (the last also for Connect JSON, see
 * connect-json-check.ts). Number spellings and `__proto__` keys
 * are found in one walk over the body, decided from the descriptors, not per
 * field.
 */

/** What the walk over a body found that the message cannot carry, by path: the handlers get it beside the message. */
export interface BodyFindings {
  /**
   * Map and Struct fields of the body with a `__proto__` key, and Value
   * fields with one at any depth, by path ("players[0].traits"). protobuf-es cannot hold that key (assigning it sets
   * the object's prototype), so the gateway carries their paths beside the
   * message and the handler can drop or refuse the key like any other.
   */
  protoKeyPaths: ReadonlySet<string>;
  /**
   * Event timestamps that are not RFC 3339 ("events[3].timestamp"): each is
   * that event's bad_timestamp rejection, not a failed call, so the walk
   * removes it from the body (which then decodes) and reports its path.
   */
  unreadableTimestamps: ReadonlySet<string>;
  /**
   * Whether the walk changed the body: it removed an unreadable timestamp, or wrote one in protobuf's own form
   * (UTC, `Z`), which protobuf-es's reader takes (it refuses `t`, `z` and more than nine digits of a fraction).
   */
  rewritten: boolean;
}

export interface JsonRequest extends BodyFindings {
  body: JsonObject;
}

export interface JsonRequestError {
  status: 400 | 415;
  message: string;
}

/** Absent means JSON; else application/json, with no charset or UTF-8. */
function isJsonContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return true;
  const [type, ...params] = contentType.split(";").map((part) => part.trim().toLowerCase());
  if (type !== "application/json") return false;
  return params.every((param) => {
    const [name, value = ""] = param.split("=", 2).map((part) => part.trim());
    return name !== "charset" || ["utf-8", "utf8", '"utf-8"'].includes(value);
  });
}

export function parseJsonRequest(
  contentType: string | undefined,
  bytes: Uint8Array,
  schema: DescMessage,
): Result<JsonRequest, JsonRequestError> {
  if (!isJsonContentType(contentType)) {
    return fail({ status: 415, message: `Content-Type ${contentType} is not supported: send application/json` });
  }
  const text = decodeUtf8Body(bytes);
  if (text === undefined) return fail({ status: 400, message: INVALID_UTF8_BODY });
  // No body at all is an empty request; a body of only whitespace is no JSON value, as JSON.parse says.
  let body: JsonValue = {};
  if (text !== "") {
    try {
      body = JSON.parse(text) as JsonValue;
    } catch (error) {
      return fail({ status: 400, message: `malformed JSON: ${(error as Error).message}` });
    }
  }
  if (!isObject(body)) return fail({ status: 400, message: "request body must be a JSON object" });
  const inspected = inspectJsonBody(schema, body);
  return inspected.ok ? ok({ body, ...inspected.value }) : fail({ status: 400, message: inspected.error });
}

/**
 * What protobuf-es's JSON reader would let through or lose in a message's
 * JSON: a number spelled other than in decimal ("page: ... is not a decimal
 * number"), or else the paths of the `__proto__` keys and of the unreadable
 * event timestamps, which it removes from `json` (BodyFindings).
 */
export function inspectJsonBody(schema: DescMessage, json: JsonValue): Result<BodyFindings, string> {
  const found = { protoKeyPaths: new Set<string>(), unreadableTimestamps: new Set<string>(), rewritten: false };
  const problem = walkMessage(schema, json, "", found);
  return problem === undefined ? ok(found) : fail(problem);
}

/** The messages whose timestamp is judged per item (an event's bad_timestamp) instead of failing the call. */
const PER_ITEM_TIMESTAMPS: ReadonlySet<string> = new Set([EventSchema.typeName]);

const isObject = (json: JsonValue): json is JsonObject =>
  typeof json === "object" && json !== null && !Array.isArray(json);

/**
 * A number as protobuf's JSON accepts it in a string, but decimal only (never
 * "0x2a"): an integer field takes "42" or "-7", as the OpenAPI document's
 * pattern says; a float field also "-1.5" and "1e3", and "NaN" and "Infinity".
 */
const INTEGER = /^-?\d+$/;
const DECIMAL = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;
const FLOATS: ReadonlySet<ScalarType> = new Set([ScalarType.FLOAT, ScalarType.DOUBLE]);
const NON_FINITE: ReadonlySet<string> = new Set(["NaN", "Infinity", "-Infinity"]);
const NON_NUMBERS: ReadonlySet<ScalarType> = new Set([ScalarType.STRING, ScalarType.BYTES, ScalarType.BOOL]);
const WRAPPERS = /^google\.protobuf\.(Double|Float|Int64|UInt64|Int32|UInt32)Value$/;

/** The 32-bit integer types and their ranges; protobuf-es's own message names the field by its full proto name. */
const INT32_RANGES = new Map<ScalarType, [number, number, string]>([
  [ScalarType.INT32, [-(2 ** 31), 2 ** 31 - 1, "int32"]],
  [ScalarType.SINT32, [-(2 ** 31), 2 ** 31 - 1, "int32"]],
  [ScalarType.SFIXED32, [-(2 ** 31), 2 ** 31 - 1, "int32"]],
  [ScalarType.UINT32, [0, 2 ** 32 - 1, "uint32"]],
  [ScalarType.FIXED32, [0, 2 ** 32 - 1, "uint32"]],
]);

/** The walk adds to the sets of BodyFindings as it goes. */
interface Findings {
  protoKeyPaths: Set<string>;
  unreadableTimestamps: Set<string>;
  rewritten: boolean;
}

/** Each walk function returns the problem it found ("field: ..."), or undefined. */
function scalarProblem(type: ScalarType, json: JsonValue, path: string): string | undefined {
  if (NON_NUMBERS.has(type) || (typeof json !== "string" && typeof json !== "number")) return undefined;
  if (typeof json === "string") {
    const decimal = FLOATS.has(type) ? DECIMAL.test(json) || NON_FINITE.has(json) : INTEGER.test(json);
    if (!decimal) return `${path}: ${JSON.stringify(json)} is not a decimal number`;
  }
  const range = INT32_RANGES.get(type);
  if (range === undefined) return undefined;
  const [min, max, name] = range;
  const value = Number(json);
  if (!Number.isInteger(value)) return `${path}: ${JSON.stringify(json)} is not an integer`;
  return value < min || value > max ? `${path}: ${JSON.stringify(json)} is out of range for ${name}` : undefined;
}

/** A Timestamp's JSON is an RFC 3339 string (rfc3339.ts); its form for protobuf-es's reader, or undefined. */
const readableTimestamp = (json: JsonValue) => (typeof json === "string" ? readableRfc3339(json) : undefined);

const timestampProblem = (json: JsonValue, path: string) =>
  `${path}: ${JSON.stringify(json)} is not an RFC 3339 timestamp (e.g. "2026-11-22T10:00:00Z")`;

function walkMessage(schema: DescMessage, json: JsonValue, path: string, found: Findings): string | undefined {
  if (schema.typeName === "google.protobuf.Struct") {
    if (isObject(json) && Object.hasOwn(json, "__proto__")) found.protoKeyPaths.add(path);
    return undefined;
  }
  // Any JSON value (a config value): a `__proto__` key at any depth would be lost.
  if (schema.typeName === "google.protobuf.Value") {
    if (holdsProtoKey(json)) found.protoKeyPaths.add(path);
    return undefined;
  }
  if (WRAPPERS.test(schema.typeName)) return scalarProblem(schema.fields[0].scalar!, json, path);
  // A Timestamp in a list or map (no request has one) is checked here; a field's is also rewritten (walkTimestamp).
  if (schema.typeName === TimestampSchema.typeName) {
    return readableTimestamp(json) === undefined ? timestampProblem(json, path) : undefined;
  }
  // Other well-known types have JSON forms of their own, which protobuf-es checks.
  if (schema.typeName.startsWith("google.protobuf.") || !isObject(json)) return undefined;
  for (const [key, value] of Object.entries(json)) {
    const field = schema.fields.find((f) => f.name === key || f.jsonName === key);
    const at = path === "" ? (field?.name ?? key) : `${path}.${field?.name ?? key}`;
    if (field === undefined) return `${at}: unknown field`;
    // null means "unset" only where a field can be unset (the OpenAPI document admits null there alone).
    if (value === null) {
      if (isNullWhenUnset(field)) continue;
      return `${at}: must not be null`;
    }
    const problem =
      field.fieldKind === "message" && field.message.typeName === TimestampSchema.typeName
        ? walkTimestamp(schema, json, key, at, found)
        : walkField(field, value, at, found);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function holdsProtoKey(json: JsonValue): boolean {
  if (Array.isArray(json)) return json.some(holdsProtoKey);
  return isObject(json) && (Object.hasOwn(json, "__proto__") || Object.values(json).some(holdsProtoKey));
}

/**
 * A Timestamp field of `parent`: written in protobuf's own form when it is RFC 3339 in another, else the call's
 * problem, or (an event's) removed and reported as that item's (PER_ITEM_TIMESTAMPS).
 */
function walkTimestamp(parent: DescMessage, json: JsonObject, key: string, path: string, found: Findings) {
  const readable = readableTimestamp(json[key]);
  if (readable === undefined) {
    if (!PER_ITEM_TIMESTAMPS.has(parent.typeName)) return timestampProblem(json[key], path);
    found.unreadableTimestamps.add(path);
    delete json[key];
    found.rewritten = true;
  } else if (readable !== json[key]) {
    json[key] = readable;
    found.rewritten = true;
  }
  return undefined;
}

function walkField(field: DescField, json: JsonValue, path: string, found: Findings): string | undefined {
  switch (field.fieldKind) {
    case "scalar":
      return scalarProblem(field.scalar, json, path);
    case "message":
      return walkMessage(field.message, json, path, found);
    case "list":
      if (!Array.isArray(json) || field.listKind === "enum") return undefined;
      for (const [index, item] of json.entries()) {
        const at = `${path}[${index}]`;
        const problem =
          field.listKind === "scalar"
            ? scalarProblem(field.scalar, item, at)
            : walkMessage(field.message, item, at, found);
        if (problem !== undefined) return problem;
      }
      return undefined;
    case "map":
      if (!isObject(json)) return undefined;
      if (Object.hasOwn(json, "__proto__")) found.protoKeyPaths.add(path);
      for (const [key, value] of Object.entries(json)) {
        const at = `${path}[${JSON.stringify(key)}]`;
        const problem =
          scalarProblem(field.mapKey, key, at) ??
          (field.mapKind === "scalar"
            ? scalarProblem(field.scalar, value, at)
            : field.mapKind === "message"
              ? walkMessage(field.message, value, at, found)
              : undefined);
        if (problem !== undefined) return problem;
      }
      return undefined;
    default:
      return undefined;
  }
}
