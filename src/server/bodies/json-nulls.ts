import type { DescField, DescMessage, JsonObject, JsonValue } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence, hasCustomJsonRepresentation } from "@bufbuild/protobuf/wkt";

/**
 * Whether /v1 writes this field as `null` when it is unset: every singular
 * field with explicit presence, that is a proto3 `optional` scalar or enum,
 * a message field (well-known types included) or a member of a oneof.
 * Repeated and map fields have no presence: they are written as [] and {}.
 */
export function isNullWhenUnset(field: DescField): boolean {
  return (
    field.fieldKind !== "list" && field.fieldKind !== "map" && field.presence === FeatureSet_FieldPresence.EXPLICIT
  );
}

/**
 * The proto3 JSON of a `desc` message (proto field names, implicit defaults
 * emitted) with `null` written for every unset field that has explicit
 * presence, at every depth, in field order. A oneof says which one thing the
 * message is: it is written as its member that is set, the others left out, or,
 * none set, as its first member `null`. Well-known types with a JSON form
 * of their own (Timestamp, Struct, Value, ...) are left as they are: their
 * content is data, not fields.
 */
export function writeExplicitNulls(desc: DescMessage, json: JsonValue): JsonValue {
  if (hasCustomJsonRepresentation(desc) || typeof json !== "object" || json === null || Array.isArray(json)) {
    return json;
  }
  const out: JsonObject = {};
  for (const field of desc.fields) {
    const value = json[field.name];
    if (value === undefined) {
      const oneof = field.oneof;
      const stated = oneof ? oneof.fields[0] === field && oneof.fields.every((f) => json[f.name] === undefined) : true;
      if (stated && isNullWhenUnset(field)) out[field.name] = null;
    } else {
      out[field.name] = withNestedNulls(field, value);
    }
  }
  // Keys that are no field (extensions) are kept, after the fields.
  for (const [key, value] of Object.entries(json)) {
    if (!(key in out) && value !== undefined) out[key] = value;
  }
  return out;
}

function withNestedNulls(field: DescField, value: JsonValue): JsonValue {
  if (field.message === undefined || value === null) return value;
  const message = field.message;
  switch (field.fieldKind) {
    case "message":
      return writeExplicitNulls(message, value);
    case "list":
      return Array.isArray(value) ? value.map((item) => writeExplicitNulls(message, item)) : value;
    case "map":
      return typeof value === "object" && !Array.isArray(value)
        ? Object.fromEntries(Object.entries(value).map(([key, item]) => [key, writeExplicitNulls(message, item)]))
        : value;
    default:
      return value;
  }
}
