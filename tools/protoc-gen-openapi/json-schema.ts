/** A JSON Schema (2020-12, the dialect of OpenAPI 3.1) as plain data. */
export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  $ref?: string;
  description?: string;
  [keyword: string]: unknown;
}

/** `schema`, or null. */
export function orNull(schema: JsonSchema): JsonSchema {
  if (schema.type === undefined) {
    // A $ref or a composite: null as an alternative; an untyped schema ({}, any JSON) admits null already.
    const { description, ...rest } = schema;
    if (Object.keys(rest).length === 0) return schema;
    return { ...(description === undefined ? {} : { description }), anyOf: [rest, { type: "null" }] };
  }
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  const nullable: JsonSchema = { ...schema, type: types.includes("null") ? types : [...types, "null"] };
  if (schema.enum && !schema.enum.includes(null)) nullable.enum = [...schema.enum, null];
  if ("const" in schema) {
    delete nullable.const;
    nullable.enum = [schema.const, null];
  }
  return nullable;
}
