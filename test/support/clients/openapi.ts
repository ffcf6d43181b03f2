import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";

/** RFC 3339 date-time, as protobuf JSON writes a Timestamp (always UTC, "Z"). */
const DATE_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)$/;

const FORMATS = {
  "date-time": (text: string) => DATE_TIME.test(text) && !Number.isNaN(Date.parse(text)),
  int32: { type: "number" as const, validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 },
  uint32: { type: "number" as const, validate: (n: number) => Number.isInteger(n) && n >= 0 && n < 2 ** 32 },
  int64: /^-?[0-9]+$/,
  uint64: /^[0-9]+$/,
  double: true as const,
  float: true as const,
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
  email: /^[^@\s]+@[^@\s]+$/,
};

/**
 * Checks JSON values against the schemas of an OpenAPI 3.1 document with
 * ajv's JSON Schema 2020-12 dialect (the dialect of OpenAPI 3.1), strict.
 */
export function createSchemaChecker(components: { schemas: Record<string, unknown> }) {
  // Strict, except that a `required` may name a property of the enclosing schema (a field by either name).
  const ajv = new Ajv2020({
    strict: true,
    strictRequired: false,
    allowUnionTypes: true,
    allErrors: true,
    formats: FORMATS,
  });
  // The document's references point into components/schemas; ajv knows them as $defs of one schema.
  const rewrite = (schema: unknown) =>
    JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"openapi.json#/$defs/'));
  ajv.addSchema({ $id: "openapi.json", $defs: rewrite(components.schemas) });
  const compiled = new Map<string, ValidateFunction>();
  return {
    /** Why `value` does not match `schema` (a schema of the document), or undefined when it does. */
    check(schema: unknown, value: unknown): string | undefined {
      const key = JSON.stringify(schema);
      let validate = compiled.get(key);
      if (!validate) {
        validate = ajv.compile(rewrite(schema));
        compiled.set(key, validate);
      }
      return validate(value) ? undefined : ajv.errorsText(validate.errors);
    },
  };
}
