import { create, createFileRegistry, type DescMessage } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
  FileDescriptorProtoSchema,
  file_google_protobuf_struct,
} from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { VerifyResponseSchema } from "../../../gen/platformapi/v1/launch_pb.js";
import { UpdateResponseSchema } from "../../../gen/platformapi/v1/players_pb.js";
import { isNullWhenUnset, writeExplicitNulls } from "./json-nulls.js";

/**
 * message Outer {
 *   oneof choice { string a = 1; Inner b = 2; }
 *   map<string, Inner> by_key = 3;
 *   repeated Inner items = 4;
 *   optional int32 n = 5;
 *   int32 m = 6;
 *   google.protobuf.Struct data = 7;
 * }
 * message Inner { optional string x = 1; }
 */
function outerMessage(): DescMessage {
  const field = (name: string, number: number, type: Type, extra: object = {}) => ({
    name,
    number,
    type,
    label: Label.OPTIONAL,
    jsonName: name,
    ...extra,
  });
  const file = create(FileDescriptorProtoSchema, {
    name: "nulls_test.proto",
    package: "test",
    syntax: "proto3",
    dependency: ["google/protobuf/struct.proto"],
    messageType: [
      {
        name: "Outer",
        field: [
          field("a", 1, Type.STRING, { oneofIndex: 0 }),
          field("b", 2, Type.MESSAGE, { typeName: ".test.Inner", oneofIndex: 0 }),
          field("by_key", 3, Type.MESSAGE, { typeName: ".test.Outer.ByKeyEntry", label: Label.REPEATED }),
          field("items", 4, Type.MESSAGE, { typeName: ".test.Inner", label: Label.REPEATED }),
          field("n", 5, Type.INT32, { oneofIndex: 1, proto3Optional: true }),
          field("m", 6, Type.INT32),
          field("data", 7, Type.MESSAGE, { typeName: ".google.protobuf.Struct" }),
        ],
        oneofDecl: [{ name: "choice" }, { name: "_n" }],
        nestedType: [
          {
            name: "ByKeyEntry",
            field: [field("key", 1, Type.STRING), field("value", 2, Type.MESSAGE, { typeName: ".test.Inner" })],
            options: { mapEntry: true },
          },
        ],
      },
      {
        name: "Inner",
        field: [field("x", 1, Type.STRING, { oneofIndex: 0, proto3Optional: true })],
        oneofDecl: [{ name: "_x" }],
      },
    ],
  });
  const registry = createFileRegistry(file, (name) =>
    name === file_google_protobuf_struct.proto.name ? file_google_protobuf_struct : undefined,
  );
  return registry.getMessage("test.Outer")!;
}

describe("isNullWhenUnset", () => {
  it("holds for optional scalars, message fields and oneof members, not for implicit, repeated or map fields", () => {
    const outer = outerMessage();
    const decided = Object.fromEntries(outer.fields.map((f) => [f.name, isNullWhenUnset(f)]));
    expect(decided).toEqual({ a: true, b: true, by_key: false, items: false, n: true, m: false, data: true });
  });
});

describe("writeExplicitNulls", () => {
  it("writes null for every unset field with presence, in field order, and leaves set ones alone", () => {
    const json = writeExplicitNulls(VerifyResponseSchema, { error: "expired", valid: false });
    expect(JSON.stringify(json)).toBe(
      JSON.stringify({
        valid: false,
        platform_user_id: null,
        partner_user_id: null,
        installation_id: null,
        issued_at: null,
        entitlement: null,
        error: "expired",
      }),
    );
  });

  it("recurses into message fields, repeated messages and map values", () => {
    const json = writeExplicitNulls(outerMessage(), {
      b: {},
      by_key: { k: {} },
      items: [{}, { x: "set" }],
      m: 0,
    });
    expect(json).toEqual({
      b: { x: null },
      by_key: { k: { x: null } },
      items: [{ x: null }, { x: "set" }],
      n: null,
      m: 0,
      data: null,
    });
  });

  it("leaves the content of well-known types as it is: a Struct's keys are data", () => {
    const data = { nothing: null, nested: { y: 1 } };
    const json = writeExplicitNulls(outerMessage(), { a: "x", by_key: {}, items: [], n: 3, m: 1, data });
    expect(json).toEqual({ a: "x", by_key: {}, items: [], n: 3, m: 1, data });
  });

  it("writes a oneof as one member: the one set, the others left out; none set, its first as null", () => {
    const outer = outerMessage();
    expect(Object.keys(writeExplicitNulls(outer, { b: {} }) as object)).not.toContain("a");
    expect(Object.keys(writeExplicitNulls(outer, { a: "x" }) as object)).not.toContain("b");
    expect(writeExplicitNulls(outer, {})).toEqual({ a: null, n: null, data: null });
  });

  it("fills each element of the players/update answer", () => {
    const json = writeExplicitNulls(UpdateResponseSchema, {
      success: true,
      updated: [{ identity_key: "d:dev", device_id: "dev", linked: false, tags: [], dropped: [] }],
      rejected: [{ index: 1, code: "missing_identity", message: "no id" }],
      server_time: "2026-01-01T00:00:00Z",
    });
    expect(json).toMatchObject({
      updated: [{ partner_user_id: null, device_id: "dev", platform_user_id: null }],
      rejected: [{ partner_user_id: null, device_id: null }],
    });
  });
});
