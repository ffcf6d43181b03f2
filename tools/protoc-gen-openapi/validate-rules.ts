import { getOption, hasOption, type DescField, type DescMessage, type Message } from "@bufbuild/protobuf";
import { reflect } from "@bufbuild/protobuf/reflect";
import {
  field as fieldRules,
  file_buf_validate_validate,
  Ignore,
  message as messageRules,
  type FieldRules,
  type MessageOneofRule,
} from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import type { JsonSchema } from "./json-schema.js";

/** The buf.validate rules of a field, or undefined when it has none or they are ignored. */
export function fieldRulesOf(field: DescField): FieldRules | undefined {
  if (!hasOption(field, fieldRules)) return undefined;
  const rules = getOption(field, fieldRules);
  // Rules skipped for some values make no constraint a schema can state simply; leave the schema looser.
  return rules.ignore === Ignore.ALWAYS || rules.ignore === Ignore.IF_ZERO_VALUE ? undefined : rules;
}

/** The message's buf.validate oneof rules: at most one of `fields` set, exactly one when `required`. */
export function oneofRulesOf(message: DescMessage): MessageOneofRule[] {
  return hasOption(message, messageRules) ? getOption(message, messageRules).oneof : [];
}

/**
 * JSON-schema keywords for the common buf.validate rules of one value: string
 * length, pattern, const/in, well-known formats; numeric bounds; the item
 * count of a repeated field and the pair count of a map. Rules without a
 * plain JSON-schema counterpart (CEL, prefix, bytes lengths, ...) are left to
 * the server.
 */
export function constraintsOf(rules: FieldRules): JsonSchema {
  const { case: kind, value } = rules.type;
  if (kind === undefined) return {};
  const set = setFields(value);
  switch (kind) {
    case "string":
      return stringConstraints(set);
    case "repeated":
      return renamed(set, { min_items: "minItems", max_items: "maxItems", unique: "uniqueItems" });
    case "map":
      return renamed(set, { min_pairs: "minProperties", max_pairs: "maxProperties" });
    case "bool":
      return renamed(set, { const: "const" });
    case "enum": // Rules name enum numbers; /v1 writes enum names.
    case "bytes":
    case "any":
    case "duration":
    case "fieldMask":
    case "timestamp":
      return {};
    default:
      return numericConstraints(set);
  }
}

/** The rules for each element of a repeated field, if any. */
export function itemRulesOf(rules: FieldRules): FieldRules | undefined {
  return rules.type.case === "repeated" ? rules.type.value.items : undefined;
}

const STRING_FORMATS: Record<string, string> = {
  email: "email",
  hostname: "hostname",
  ipv4: "ipv4",
  ipv6: "ipv6",
  uri: "uri",
  uri_ref: "uri-reference",
  uuid: "uuid",
};

function stringConstraints(set: Map<string, unknown>): JsonSchema {
  const schema = renamed(set, {
    const: "const",
    min_len: "minLength",
    max_len: "maxLength",
    pattern: "pattern",
    in: "enum",
  });
  if (set.has("len")) schema.minLength = schema.maxLength = Number(set.get("len"));
  for (const [rule, format] of Object.entries(STRING_FORMATS)) {
    if (set.get(rule) === true) schema.format = format;
  }
  return schema;
}

function numericConstraints(set: Map<string, unknown>): JsonSchema {
  const schema = renamed(set, { const: "const", in: "enum" });
  const lower = set.has("gt") ? Number(set.get("gt")) : set.has("gte") ? Number(set.get("gte")) : undefined;
  const upper = set.has("lt") ? Number(set.get("lt")) : set.has("lte") ? Number(set.get("lte")) : undefined;
  // buf.validate reads a lower bound above the upper one as "outside the range": left to the server.
  if (lower !== undefined && upper !== undefined && lower > upper) return schema;
  return {
    ...schema,
    ...renamed(set, { gt: "exclusiveMinimum", gte: "minimum", lt: "exclusiveMaximum", lte: "maximum" }),
  };
}

/** The rule fields that are set, by proto name, with 64-bit values as numbers. */
function setFields(value: Message): Map<string, unknown> {
  const desc = ruleMessage(value.$typeName);
  const message = reflect(desc, value);
  const set = new Map<string, unknown>();
  for (const field of desc.fields) {
    if (!message.isSet(field)) continue;
    const raw: unknown =
      field.fieldKind === "list" ? [...(message.get(field) as Iterable<unknown>)] : message.get(field);
    set.set(field.name, Array.isArray(raw) ? raw.map(plain) : plain(raw));
  }
  return set;
}

function plain(value: unknown): unknown {
  return typeof value === "bigint" ? Number(value) : value;
}

function renamed(set: Map<string, unknown>, names: Record<string, string>): JsonSchema {
  const schema: JsonSchema = {};
  for (const [rule, keyword] of Object.entries(names)) {
    if (set.has(rule)) schema[keyword] = set.get(rule);
  }
  return schema;
}

function ruleMessage(typeName: string): DescMessage {
  const desc = file_buf_validate_validate.messages.find((m) => m.typeName === typeName);
  if (!desc) throw new Error(`unknown buf.validate rules message ${typeName}`);
  return desc;
}
