import { flat_object_keys as flatObjectKeys } from "../../gen/platformapi/v1/options_pb.js";
import {
  getOption,
  ScalarType,
  type AnyDesc,
  type DescEnum,
  type DescField,
  type DescMessage,
} from "@bufbuild/protobuf";
import { hasCustomJsonRepresentation, isWrapperDesc } from "@bufbuild/protobuf/wkt";
import { getComments } from "@bufbuild/protoplugin";
import { isNullWhenUnset } from "../../src/server/bodies/json-nulls.js";
import { orNull, type JsonSchema } from "./json-schema.js";
import { boundedStrings, constrained, nonZero } from "./constrained.js";
import { fieldRulesOf, itemRulesOf, oneofRulesOf } from "./validate-rules.js";

/**
 * What a request may carry ("input": proto or JSON field names, numbers also
 * as strings, null for a field with presence) or what an answer carries
 * ("output": proto field names only, every field present, null where a field
 * with presence is unset, 64-bit integers as strings).
 */
export type Direction = "input" | "output";

type ValueType = { scalar: ScalarType } | { enum: DescEnum } | { message: DescMessage };

/**
 * The component schemas of every message reachable from the requests and the
 * responses. A message used both ways gets two schemas: `<type name>` as
 * written and `<type name>Input` as accepted.
 */
export class MessageSchemas {
  private readonly inputs: Set<DescMessage>;
  private readonly outputs: Set<DescMessage>;

  constructor(requests: Iterable<DescMessage>, responses: Iterable<DescMessage>) {
    this.inputs = reachable(requests);
    this.outputs = reachable(responses);
  }

  /** The schema of a request or response body. */
  ref(message: DescMessage, direction: Direction): JsonSchema {
    return this.valueSchema({ message }, direction);
  }

  /** Every component schema, by name, in name order. */
  components(): Record<string, JsonSchema> {
    const entries: [string, JsonSchema][] = [];
    for (const message of this.outputs) entries.push([this.name(message, "output"), this.object(message, "output")]);
    for (const message of this.inputs) entries.push([this.name(message, "input"), this.object(message, "input")]);
    return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }

  private name(message: DescMessage, direction: Direction): string {
    return direction === "input" && this.outputs.has(message) ? `${message.typeName}Input` : message.typeName;
  }

  private object(message: DescMessage, direction: Direction): JsonSchema {
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    const allOf: JsonSchema[] = [];
    for (const field of message.fields) {
      const schema = this.fieldSchema(field, direction);
      properties[field.name] = schema;
      const alias = direction === "input" && field.jsonName !== field.name;
      if (alias) properties[field.jsonName] = { ...schema, description: `\`${field.name}\` by its JSON name.` };
      // protobuf's JSON reader refuses a field set by both its names.
      if (alias) allOf.push({ not: { required: [field.name, field.jsonName] } });
      if (direction === "output") {
        if (!field.oneof) required.push(field.name);
      } else if (fieldRulesOf(field)?.required) {
        if (alias) allOf.push({ anyOf: [{ required: [field.name] }, { required: [field.jsonName] }] });
        else required.push(field.name);
      }
    }
    if (direction === "input") allOf.push(...oneofSchemas(message));
    // An answer's oneof is written as exactly one of its members (src/server/bodies/json-nulls.ts).
    else allOf.push(...message.oneofs.map((oneof) => ({ oneOf: oneof.fields.map((f) => ({ required: [f.name] })) })));
    return {
      type: "object",
      ...describedBy(message),
      properties,
      ...(required.length > 0 ? { required } : {}),
      ...(allOf.length > 0 ? { allOf } : {}),
      additionalProperties: false,
    };
  }

  private fieldSchema(field: DescField, direction: Direction): JsonSchema {
    const rules = fieldRulesOf(field);
    let schema: JsonSchema;
    switch (field.fieldKind) {
      case "list": {
        const itemRules = rules && itemRulesOf(rules);
        const items = this.valueSchema(elementType(field), direction);
        schema = { type: "array", items: itemRules ? constrained(items, itemRules) : items };
        break;
      }
      case "map":
        schema = {
          type: "object",
          ...mapKeySchema(field.mapKey),
          additionalProperties: this.valueSchema(elementType(field), direction),
        };
        break;
      default:
        schema = this.valueSchema(elementType(field), direction);
    }
    const flatKeys = getOption(field, flatObjectKeys);
    if (flatKeys !== "") {
      schema = { type: "object", propertyNames: { pattern: flatKeys }, additionalProperties: { type: FLAT_VALUES } };
    }
    if (rules) schema = constrained(schema, rules);
    if (rules?.required && field.fieldKind === "scalar") schema = nonZero(schema);
    schema = boundedStrings(schema);
    if (isNullWhenUnset(field)) schema = orNull(schema);
    return { ...describedBy(field), ...schema };
  }

  private valueSchema(type: ValueType, direction: Direction): JsonSchema {
    if ("scalar" in type) return scalarSchema(type.scalar, direction);
    if ("enum" in type) return enumSchema(type.enum, direction);
    return (
      wellKnownSchema(type.message, direction) ?? {
        $ref: `#/components/schemas/${this.name(type.message, direction)}`,
      }
    );
  }
}

/** Whether `{}` (and so an empty body) is a valid `message`: none of its fields or oneofs is required. */
export function acceptsEmptyObject(message: DescMessage): boolean {
  return (
    !message.fields.some((field) => fieldRulesOf(field)?.required) && !oneofRulesOf(message).some((r) => r.required)
  );
}

/**
 * The message's oneof rules as schemas: a field counts as set when sent by
 * either name with a value other than its zero value (protovalidate's reading
 * for a field without presence), and `required` asks for one of them.
 */
function oneofSchemas(message: DescMessage): JsonSchema[] {
  const schemas: JsonSchema[] = [];
  for (const rule of oneofRulesOf(message)) {
    const fields = rule.fields.map((name) => message.fields.find((f) => f.name === name)!);
    const sets = fields.map(setSchema);
    for (let i = 0; i < sets.length; i++) {
      for (let j = i + 1; j < sets.length; j++) schemas.push({ not: { allOf: [sets[i], sets[j]] } });
    }
    if (rule.required) schemas.push({ anyOf: sets });
  }
  return schemas;
}

function setSchema(field: DescField): JsonSchema {
  const value: JsonSchema =
    field.fieldKind !== "scalar"
      ? {}
      : field.scalar === ScalarType.STRING
        ? { type: "string", minLength: 1 }
        : field.scalar === ScalarType.BOOL
          ? { const: true }
          : { not: { enum: [0, "0"] } };
  const names = [...new Set([field.name, field.jsonName])];
  const sent = names.map((name) => ({ required: [name], properties: { [name]: value } }));
  return sent.length === 1 ? sent[0] : { anyOf: sent };
}

/** Messages with fields of their own reachable from `roots`; well-known types with a JSON form of their own are inlined. */
function reachable(roots: Iterable<DescMessage>): Set<DescMessage> {
  const seen = new Set<DescMessage>();
  const visit = (message: DescMessage) => {
    if (seen.has(message) || hasCustomJsonRepresentation(message)) return;
    seen.add(message);
    for (const field of message.fields) if (field.message) visit(field.message);
  };
  for (const root of roots) visit(root);
  return seen;
}

function elementType(field: DescField): ValueType {
  if (field.message) return { message: field.message };
  if (field.enum) return { enum: field.enum };
  return { scalar: field.scalar! };
}

const FLAT_VALUES = ["string", "number", "boolean"];

const WELL_KNOWN: Record<string, JsonSchema> = {
  "google.protobuf.Timestamp": { type: "string", format: "date-time" },
  "google.protobuf.Duration": { type: "string", pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$" },
  "google.protobuf.FieldMask": { type: "string" },
  "google.protobuf.Struct": { type: "object" },
  "google.protobuf.ListValue": { type: "array" },
  "google.protobuf.Value": {},
  "google.protobuf.Any": { type: "object", properties: { "@type": { type: "string" } }, required: ["@type"] },
};

function wellKnownSchema(message: DescMessage, direction: Direction): JsonSchema | undefined {
  // A request's only Timestamp is an event's, and any value but an RFC 3339 string is that event's rejection, not a
  // failed call: the call accepts every JSON value there.
  if (message.typeName === "google.protobuf.Timestamp" && direction === "input") {
    return { description: "An RFC 3339 string; any other value is the event's bad_timestamp rejection." };
  }
  if (isWrapperDesc(message)) return scalarSchema(message.fields[0].scalar!, direction);
  const schema = WELL_KNOWN[message.typeName];
  return schema && structuredClone(schema);
}

function scalarSchema(scalar: ScalarType, direction: Direction): JsonSchema {
  switch (scalar) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT: {
      const format = scalar === ScalarType.DOUBLE ? "double" : "float";
      // Written as a number, or "NaN", "Infinity", "-Infinity"; read also from a numeric string.
      return direction === "output"
        ? { type: ["number", "string"], format, pattern: "^(NaN|-?Infinity)$" }
        : { type: ["number", "string"], format };
    }
    default:
      return integerSchema(scalar, direction);
  }
}

function integerSchema(scalar: ScalarType, direction: Direction): JsonSchema {
  const unsigned = [ScalarType.UINT32, ScalarType.FIXED32, ScalarType.UINT64, ScalarType.FIXED64].includes(scalar);
  const long = [ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64];
  const format = `${unsigned ? "u" : ""}int${long.includes(scalar) ? 64 : 32}`;
  const pattern = unsigned ? "^[0-9]+$" : "^-?[0-9]+$";
  const minimum = unsigned ? { minimum: 0 } : {};
  if (long.includes(scalar)) {
    // protobuf JSON writes 64-bit integers as decimal strings and reads strings or numbers.
    return direction === "output"
      ? { type: "string", format, pattern }
      : { type: ["string", "integer"], format, pattern, ...minimum };
  }
  // A 32-bit integer out of its range is refused by the service (json-request.ts names it).
  const bounds = unsigned ? { minimum: 0, maximum: 2 ** 32 - 1 } : { minimum: -(2 ** 31), maximum: 2 ** 31 - 1 };
  return direction === "output"
    ? { type: "integer", format, ...minimum }
    : { type: ["integer", "string"], format, pattern, ...bounds };
}

function enumSchema(desc: DescEnum, direction: Direction): JsonSchema {
  const names = desc.values.map((v) => v.name);
  return direction === "output"
    ? { type: "string", enum: names, ...describedBy(desc) }
    : { type: ["string", "integer"], enum: [...names, ...desc.values.map((v) => v.number)], ...describedBy(desc) };
}

function mapKeySchema(key: ScalarType): JsonSchema {
  if (key === ScalarType.STRING) return {};
  if (key === ScalarType.BOOL) return { propertyNames: { enum: ["true", "false"] } };
  return { propertyNames: { pattern: "^-?[0-9]+$" } };
}

/** `{description}` from the element's proto comment, or nothing. */
export function describedBy(desc: Exclude<AnyDesc, { kind: "file" }>): { description?: string } {
  const { leading, trailing } = getComments(desc);
  const text = (leading ?? trailing ?? "")
    .split("\n")
    .map((line) => line.replace(/^ /, "").trimEnd())
    .join("\n")
    .trim();
  return text === "" ? {} : { description: text };
}
