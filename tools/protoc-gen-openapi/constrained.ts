import type { FieldRules } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import toRegexRange from "to-regex-range";
import type { JsonSchema } from "./json-schema.js";
import { constraintsOf } from "./validate-rules.js";

const NUMBER = ["number", "integer"];
/** The JSON types each constraint keyword applies to (const and enum apply to all). */
const KEYWORD_TYPES: Record<string, string[]> = {
  minimum: NUMBER,
  maximum: NUMBER,
  exclusiveMinimum: NUMBER,
  exclusiveMaximum: NUMBER,
  minLength: ["string"],
  maxLength: ["string"],
  pattern: ["string"],
  format: ["string"],
  minItems: ["array"],
  maxItems: ["array"],
  uniqueItems: ["array"],
  minProperties: ["object"],
  maxProperties: ["object"],
};

/**
 * `schema` with the constraints of `rules` that apply to its JSON types: the
 * bounds of a 64-bit integer written as a string are left out, and numbers
 * in const/in are matched in each form the value may take ("5" or 5).
 */
export function constrained(schema: JsonSchema, rules: FieldRules): JsonSchema {
  const types = [schema.type ?? []].flat();
  const out: JsonSchema = { ...schema };
  for (const [keyword, value] of Object.entries(constraintsOf(rules))) {
    if (keyword === "const" || keyword === "enum") {
      const values = keyword === "const" ? [value] : (value as unknown[]);
      const forms = values.flatMap((v) => (typeof v === "number" ? numberForms(v, types) : [v]));
      if (forms.length === 1) out.const = forms[0];
      else out.enum = forms;
    } else if (KEYWORD_TYPES[keyword]?.some((type) => types.includes(type)) ?? true) {
      out[keyword] = value;
    }
  }
  return out;
}

/**
 * A required scalar (buf.validate `required`: not its zero value): a string of
 * at least one character, an integer of at least 1, also when sent as a string.
 */
export function nonZero(schema: JsonSchema): JsonSchema {
  const types = [schema.type ?? []].flat();
  if (types.includes("integer")) {
    const minimum = Math.max(Number(schema.minimum ?? 1), 1);
    return { ...schema, minimum, ...(types.includes("string") ? { pattern: "^0*[1-9][0-9]*$" } : {}) };
  }
  if (types.includes("string")) return { ...schema, minLength: Math.max(Number(schema.minLength ?? 1), 1) };
  return schema;
}

/**
 * An integer that may come as a decimal string (as the service reads it: digits, an optional minus, leading zeros
 * allowed) is held to its bounds in that form too, by a pattern of the range; only bounds within 2^53 are stated.
 */
export function boundedStrings(schema: JsonSchema): JsonSchema {
  const types = [schema.type ?? []].flat();
  if (!types.includes("integer") || !types.includes("string")) return schema;
  const min = Math.max(Number(schema.minimum ?? -Infinity), Number(schema.exclusiveMinimum ?? -Infinity) + 1);
  const max = Math.min(Number(schema.maximum ?? Infinity), Number(schema.exclusiveMaximum ?? Infinity) - 1);
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min > max) return schema;
  const forms: string[] = [];
  if (max >= 0) forms.push(`0*${toRegexRange(Math.max(min, 0), max)}`);
  if (min < 0) forms.push(`-0*${toRegexRange(Math.max(1, -max), -min)}`);
  if (min <= 0 && max >= 0) forms.push("-0+");
  return { ...schema, pattern: `^(?:${forms.join("|")})$` };
}

function numberForms(value: number, types: string[]): unknown[] {
  const asNumber = types.some((type) => NUMBER.includes(type)) ? [value] : [];
  return types.includes("string") ? [...asNumber, String(value)] : asNumber;
}
