import { create, fromBinary, setExtension, toBinary, type DescFile, type MessageInitShape } from "@bufbuild/protobuf";
import {
  CodeGeneratorRequestSchema,
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
  FieldDescriptorProtoSchema,
  FieldOptionsSchema,
  file_google_protobuf_duration,
  file_google_protobuf_struct,
  file_google_protobuf_timestamp,
  file_google_protobuf_wrappers,
  FileDescriptorProtoSchema,
  MessageOptionsSchema,
  MethodOptionsSchema,
  type FieldDescriptorProto,
  type FileDescriptorProto,
} from "@bufbuild/protobuf/wkt";
import {
  field as fieldRules,
  FieldRulesSchema,
  file_buf_validate_validate,
  message as messageRules,
  MessageRulesSchema,
} from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { describe, expect, it } from "vitest";
import { createSchemaChecker } from "../../test/support/clients/openapi.js";
import { file_google_api_annotations, http } from "../../gen/google/api/annotations_pb.js";
import { HttpRuleSchema } from "../../gen/google/api/http_pb.js";
import { file_platformapi_v1_options, flat_object_keys, required_scope } from "../../gen/platformapi/v1/options_pb.js";
import { openapiPlugin } from "./plugin.js";

type Field = Exclude<MessageInitShape<typeof FieldDescriptorProtoSchema>, FieldDescriptorProto>;

function field(name: string, number: number, type: Type, extra: Partial<Field> = {}): Field {
  const jsonName = name.replace(/_(\w)/g, (_, c: string) => c.toUpperCase());
  return { name, number, type, label: Label.OPTIONAL, jsonName, ...extra };
}

function rules(init: MessageInitShape<typeof FieldRulesSchema>) {
  const options = create(FieldOptionsSchema);
  setExtension(options, fieldRules, create(FieldRulesSchema, init));
  return { options };
}

function route(verb: "get" | "post" | "put", path: string, scope: string) {
  const options = create(MethodOptionsSchema);
  setExtension(
    options,
    http,
    create(HttpRuleSchema, { pattern: { case: verb, value: path }, body: verb === "get" ? "" : "*" }),
  );
  setExtension(options, required_scope, scope);
  return options;
}

/** A field of every kind the generator handles, some with buf.validate rules. */
function sampleFields(): Field[] {
  const message = (name: string) => ({ typeName: `.test.v1.${name}` });
  const wkt = (name: string) => ({ typeName: `.google.protobuf.${name}` });
  return [
    field("big", 1, Type.INT64, rules({ type: { case: "int64", value: { greaterThan: { case: "gte", value: 1n } } } })),
    field("display_name", 2, Type.STRING, {
      ...rules({
        required: true,
        type: { case: "string", value: { minLen: 1n, maxLen: 8n, pattern: "^[a-z]+$" } },
      }),
    }),
    field("tags", 3, Type.STRING, {
      label: Label.REPEATED,
      ...rules({
        type: {
          case: "repeated",
          value: { maxItems: 2n, items: { type: { case: "string", value: { maxLen: 3n } } } },
        },
      }),
    }),
    field("kind", 4, Type.ENUM, { typeName: ".test.v1.Kind" }),
    field("ratio", 5, Type.DOUBLE, { oneofIndex: 1, proto3Optional: true }),
    field("at", 6, Type.MESSAGE, wkt("Timestamp")),
    field("props", 7, Type.MESSAGE, wkt("Struct")),
    field("anything", 8, Type.MESSAGE, wkt("Value")),
    field("wrapped", 9, Type.MESSAGE, wkt("Int32Value")),
    field("took", 10, Type.MESSAGE, wkt("Duration")),
    field("children", 11, Type.MESSAGE, { label: Label.REPEATED, ...message("Sample.ChildrenEntry") }),
    field("a", 12, Type.STRING, { oneofIndex: 0 }),
    field("b", 13, Type.MESSAGE, { oneofIndex: 0, ...message("Sample") }),
    field("blob", 14, Type.BYTES),
    field("count", 15, Type.UINT32),
    field("level", 16, Type.INT64, rules({ type: { case: "int64", value: { in: [1n, 2n] } } })),
    field(
      "page",
      17,
      Type.INT32,
      rules({
        type: {
          case: "int32",
          value: { greaterThan: { case: "gte", value: 1 }, lessThan: { case: "lte", value: 100 } },
        },
      }),
    ),
    field("filter", 18, Type.MESSAGE, { ...wkt("Struct"), options: flatObject("^[^$]") }),
    field("first", 19, Type.STRING),
    field("second", 20, Type.STRING),
  ];
}

function flatObject(keys: string) {
  const options = create(FieldOptionsSchema);
  setExtension(options, flat_object_keys, keys);
  return options;
}

/** At most one of first and second. */
function oneofRule() {
  const options = create(MessageOptionsSchema);
  setExtension(options, messageRules, create(MessageRulesSchema, { oneof: [{ fields: ["first", "second"] }] }));
  return options;
}

/** A post, a get, and (with putPath) a verb the gateway does not serve. */
function sampleMethods(putPath?: string) {
  return [
    {
      name: "Do",
      inputType: ".test.v1.Sample",
      outputType: ".test.v1.Sample",
      options: route("post", "/v1/do", "events:read"),
    },
    {
      name: "Peek",
      inputType: ".test.v1.Empty",
      outputType: ".test.v1.Sample",
      options: route("get", "/v1/peek", "public"),
    },
    ...(putPath
      ? [
          {
            name: "Put",
            inputType: ".test.v1.Empty",
            outputType: ".test.v1.Empty",
            options: route("put", putPath, "admin"),
          },
        ]
      : []),
  ];
}

/** sample.proto: a message with a field of every kind the generator handles, and two routed methods. */
function sampleFile(putPath?: string): FileDescriptorProto {
  const message = (name: string) => ({ typeName: `.test.v1.${name}` });
  return create(FileDescriptorProtoSchema, {
    name: "test/v1/sample.proto",
    package: "test.v1",
    syntax: "proto3",
    dependency: [
      "google/api/annotations.proto",
      "google/protobuf/duration.proto",
      "google/protobuf/struct.proto",
      "google/protobuf/timestamp.proto",
      "google/protobuf/wrappers.proto",
      "buf/validate/validate.proto",
      "platformapi/v1/options.proto",
    ],
    messageType: [
      {
        name: "Sample",
        field: sampleFields(),
        oneofDecl: [{ name: "choice" }, { name: "_ratio" }],
        options: oneofRule(),
        nestedType: [
          {
            name: "ChildrenEntry",
            field: [field("key", 1, Type.INT32), field("value", 2, Type.MESSAGE, message("Sample"))],
            options: { mapEntry: true },
          },
        ],
      },
      { name: "Empty" },
    ],
    enumType: [
      {
        name: "Kind",
        value: [
          { name: "KIND_UNSPECIFIED", number: 0 },
          { name: "KIND_BIG", number: 1 },
        ],
      },
    ],
    service: [
      {
        name: "SampleService",
        method: sampleMethods(putPath),
      },
    ],
    sourceCodeInfo: {
      location: [
        { path: [4, 0], span: [0, 0, 0], leadingComments: " A sample.\n Two lines.\n" },
        { path: [4, 0, 2, 0], span: [0, 0, 0], leadingComments: " A big number.\n" },
        { path: [6, 0, 2, 0], span: [0, 0, 0], leadingComments: " Does it. Then more.\n" },
      ],
    },
  });
}

/** The request buf sends: every file with its imports first, as bytes and back. */
function generate(file: FileDescriptorProto): any {
  const response = runPlugin(file, "");
  expect(response.file.map((f) => f.name)).toEqual(["openapi.json"]);
  return JSON.parse(response.file[0].content);
}

function runPlugin(file: FileDescriptorProto, parameter: string) {
  const files: FileDescriptorProto[] = [];
  const add = (desc: DescFile) => {
    if (files.some((f) => f.name === desc.proto.name)) return;
    desc.dependencies.forEach(add);
    files.push(desc.proto);
  };
  [
    file_google_api_annotations,
    file_google_protobuf_duration,
    file_google_protobuf_struct,
    file_google_protobuf_timestamp,
  ]
    .concat([file_google_protobuf_wrappers, file_buf_validate_validate, file_platformapi_v1_options])
    .forEach(add);
  const request = create(CodeGeneratorRequestSchema, {
    fileToGenerate: [file.name],
    protoFile: [...files, file],
    parameter,
  });
  return openapiPlugin.run(fromBinary(CodeGeneratorRequestSchema, toBinary(CodeGeneratorRequestSchema, request)));
}

describe("protoc-gen-openapi on a sample file", () => {
  const doc = generate(sampleFile());
  const checker = createSchemaChecker(doc.components);
  const output = { $ref: "#/components/schemas/test.v1.Sample" };
  const input = { $ref: "#/components/schemas/test.v1.SampleInput" };
  const child = {
    big: "1",
    display_name: "k",
    tags: [],
    kind: "KIND_UNSPECIFIED",
    ratio: 1.5,
    at: null,
    props: null,
    anything: { a: 1 },
    wrapped: null,
    took: null,
    children: {},
    a: "set",
    blob: "",
    count: 4294967295,
    level: "1",
    page: 1,
    filter: null,
    first: "",
    second: "",
  };
  const written = {
    big: "5",
    display_name: "abc",
    tags: ["x"],
    kind: "KIND_BIG",
    ratio: null,
    at: "2026-01-01T00:00:00Z",
    props: { any: ["json", null] },
    anything: null,
    wrapped: 3,
    took: "1.5s",
    children: { "7": child },
    a: null,
    blob: "AAE=",
    count: 0,
    level: "2",
    page: 100,
    filter: { a: 1 },
    first: "",
    second: "",
  };

  it("routes each method as the gateway serves it, with its scope and comment", () => {
    expect(Object.keys(doc.paths)).toEqual(["/v1/do", "/v1/peek"]);
    const post = doc.paths["/v1/do"].post;
    expect(post).toMatchObject({
      operationId: "SampleService_Do",
      summary: "Does it.",
      description: "Does it. Then more.\n\nNeeds an API key with the scope `events:read`.",
      "x-required-scope": "events:read",
      security: [{ ApiKey: ["events:read"] }],
    });
    expect(post.requestBody.content["application/json"].schema).toEqual(input);
    // Sample has a required field, so {} (what an empty body reads as) is no Sample.
    expect(post.requestBody.required).toBe(true);
    expect(post.responses["4XX"]).toEqual({ $ref: "#/components/responses/Error" });
    expect(doc.paths["/v1/peek"].get).toMatchObject({ security: [], description: "Needs no API key." });
    expect(doc.paths["/v1/peek"].get.requestBody).toBeUndefined();
  });

  it("describes messages and fields with their proto comments", () => {
    const sample = doc.components.schemas["test.v1.Sample"];
    expect(sample.description).toBe("A sample.\nTwo lines.");
    expect(sample.properties.big.description).toBe("A big number.");
  });

  it("writes every field as the gateway does: 64-bit as strings, well-known types, nulls where presence", () => {
    const sample = doc.components.schemas["test.v1.Sample"];
    // A oneof's members are no required property: the answer writes one of them.
    expect(sample.required).toEqual(Object.keys(written).filter((key) => key !== "a"));
    expect(checker.check(output, written)).toBeUndefined();
    expect(checker.check(output, { ...written, a: "x", b: child })).toMatch(/must match exactly one schema/);
    const withoutOneof: Record<string, unknown> = { ...written };
    delete withoutOneof.a;
    expect(checker.check(output, withoutOneof)).toMatch(/must match exactly one schema/);
    expect(checker.check(output, { ...written, children: { "7": { ...child, big: 1 } } })).toMatch(
      /big must be string/,
    );
    expect(checker.check(output, { ...written, count: 2 ** 32 })).toMatch(/format "uint32"/);
    expect(checker.check(output, { ...written, kind: 1 })).toMatch(/kind must be string/);
    expect(checker.check(output, { ...written, at: "yesterday" })).toMatch(/format "date-time"/);
    expect(checker.check(output, { ...written, took: "1.5" })).toMatch(/took must match pattern/);
    expect(checker.check(output, { ...written, count: null })).toMatch(/count must be integer/);
    expect(checker.check(output, { ...written, children: { x: child } })).toMatch(/property name/);
    const withoutNull: Record<string, unknown> = { ...written };
    delete withoutNull.ratio;
    expect(checker.check(output, withoutNull)).toMatch(/must have required property 'ratio'/);
  });

  it("accepts what protobuf JSON reads: JSON names, numbers as strings and 64-bit as numbers, enum numbers", () => {
    expect(checker.check(input, {})).toMatch(/required property 'display_name'/);
    expect(checker.check(input, { displayName: "abc", big: 5, count: "7", kind: 1, ratio: "NaN" })).toBeUndefined();
    expect(checker.check(input, { display_name: "abc", unknown: 1 })).toMatch(/additional properties/);
  });

  it("turns buf.validate rules into constraints, on the field and on repeated items", () => {
    const sample = { ...written, display_name: "abc" };
    expect(checker.check(output, { ...sample, display_name: "" })).toMatch(/fewer than 1 characters/);
    expect(checker.check(output, { ...sample, display_name: "abcdefghi" })).toMatch(/more than 8 characters/);
    expect(checker.check(output, { ...sample, display_name: "ABC" })).toMatch(/must match pattern/);
    expect(checker.check(output, { ...sample, tags: ["a", "b", "c"] })).toMatch(/more than 2 items/);
    expect(checker.check(output, { ...sample, tags: ["abcd"] })).toMatch(/more than 3 characters/);
    expect(checker.check(input, { display_name: "abc", big: 0 })).toMatch(/must be >= 1/);
    // A 64-bit value in a rule matches each JSON form of the field: "2" when written, "2" or 2 when read.
    expect(checker.check(output, { ...sample, level: 2 })).toMatch(/level must be string/);
    expect(checker.check(output, { ...sample, level: "3" })).toMatch(/level must be equal to one of/);
    expect(checker.check(input, { display_name: "abc", level: 2 })).toBeUndefined();
  });

  it("holds an integer sent as a string to its bounds, by a pattern of the range", () => {
    const page = (value: unknown) => checker.check(input, { display_name: "abc", page: value });
    for (const accepted of [1, "1", "007", "100", 100]) expect(page(accepted), String(accepted)).toBeUndefined();
    for (const refused of [0, "0", "101", "-1", "1e2", 101]) expect(page(refused), String(refused)).toBeDefined();
    const count = (value: unknown) => checker.check(input, { display_name: "abc", count: value });
    expect(count("4294967295")).toBeUndefined();
    expect(count("4294967296")).toMatch(/must match pattern/);
  });

  it("states a flat object's keys and values, a request's timestamp as any value, and a oneof rule", () => {
    const sample = (extra: object) => checker.check(input, { display_name: "abc", ...extra });
    expect(sample({ filter: { a: "x", b: 1, c: true } })).toBeUndefined();
    expect(sample({ filter: { a: { nested: 1 } } })).toMatch(/must be string,number,boolean/);
    expect(sample({ filter: { $a: 1 } })).toMatch(/property name/);
    // An event's unreadable timestamp is that event's rejection, not a failed call.
    expect(sample({ at: 5 })).toBeUndefined();
    expect(checker.check(output, { ...written, at: 5 })).toMatch(/at must be string/);
    expect(sample({ first: "x", second: "" })).toBeUndefined();
    expect(sample({ first: "x", second: "y" })).toMatch(/must NOT be valid/);
  });

  it("refuses a route the gateway does not serve", () => {
    expect(() => generate(sampleFile("/v1/put"))).toThrow(/serves only get and post/);
  });

  it("with package=, documents only that package's services (not vendored ones such as gRPC health)", () => {
    expect(runPlugin(sampleFile(), "package=test.v1").file.map((f) => f.name)).toEqual(["openapi.json"]);
    expect(runPlugin(sampleFile("/v1/put"), "package=grpc.health.v1").file).toEqual([]);
  });
});
