import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { FieldRulesSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { describe, expect, it } from "vitest";
import { constraintsOf, itemRulesOf } from "./validate-rules.js";

type Rules = MessageInitShape<typeof FieldRulesSchema>;
const constraints = (init: Rules) => constraintsOf(create(FieldRulesSchema, init));

describe("constraintsOf", () => {
  it("maps string length, pattern, const/in and well-known formats", () => {
    const string = (value: Extract<Rules["type"], { case: "string" }>["value"]) =>
      constraints({ type: { case: "string", value } });
    expect(string({ minLen: 1n, maxLen: 64n, pattern: "^[a-z]+$" })).toEqual({
      minLength: 1,
      maxLength: 64,
      pattern: "^[a-z]+$",
    });
    expect(string({ len: 3n })).toEqual({ minLength: 3, maxLength: 3 });
    expect(string({ in: ["any", "all"] })).toEqual({ enum: ["any", "all"] });
    expect(string({ const: "day" })).toEqual({ const: "day" });
    expect(string({ wellKnown: { case: "uuid", value: true } })).toEqual({ format: "uuid" });
    expect(string({ wellKnown: { case: "email", value: true } })).toEqual({ format: "email" });
    // No plain JSON-schema counterpart: left to the server.
    expect(string({ prefix: "x", minBytes: 2n })).toEqual({});
  });

  it("maps numeric bounds, inclusive and exclusive, 64-bit ones as numbers", () => {
    expect(constraints({ type: { case: "int32", value: { greaterThan: { case: "gt", value: 0 } } } })).toEqual({
      exclusiveMinimum: 0,
    });
    const int64 = { greaterThan: { case: "gte", value: 1n }, lessThan: { case: "lte", value: 1000n } } as const;
    expect(constraints({ type: { case: "int64", value: int64 } })).toEqual({ minimum: 1, maximum: 1000 });
    const double = { lessThan: { case: "lt", value: 1.5 }, in: [0.5, 1] } as const;
    expect(constraints({ type: { case: "double", value: { ...double, in: [...double.in] } } })).toEqual({
      exclusiveMaximum: 1.5,
      enum: [0.5, 1],
    });
  });

  it("leaves an inverted range (buf.validate: outside the bounds) to the server", () => {
    const outside = { greaterThan: { case: "gt", value: 10 }, lessThan: { case: "lt", value: 5 } } as const;
    expect(constraints({ type: { case: "uint32", value: outside } })).toEqual({});
  });

  it("maps repeated item counts and uniqueness, map pair counts, and gives the item rules", () => {
    const items = { type: { case: "string", value: { maxLen: 10n } } } as const;
    const repeated = create(FieldRulesSchema, {
      type: { case: "repeated", value: { minItems: 1n, maxItems: 5n, unique: true, items } },
    });
    expect(constraintsOf(repeated)).toEqual({ minItems: 1, maxItems: 5, uniqueItems: true });
    expect(constraintsOf(itemRulesOf(repeated)!)).toEqual({ maxLength: 10 });
    expect(constraints({ type: { case: "map", value: { maxPairs: 50n } } })).toEqual({ maxProperties: 50 });
  });

  it("states nothing for rules without a type", () => {
    expect(constraints({ required: true })).toEqual({});
  });
});
