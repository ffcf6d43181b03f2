import { getOption, ScalarType, type DescField, type DescMessage, type DescMethod } from "@bufbuild/protobuf";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http as httpRule } from "../../gen/google/api/annotations_pb.js";
import { requiredScope } from "../../src/server/calls/auth.js";
import { MAX_BODY_BYTES } from "../../src/server/http/http-gateway.js";
import { SERVICES } from "../../src/server/routes.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

/**
 * Generated hostile JSON at every /v1 endpoint, with a key that may call it:
 * the answer is a 2xx or a 4xx in the {code, message} shape, never a 5xx
 * (except 501 from an endpoint that is not built yet), the service keeps
 * answering, and another project's data does not change.
 */

/** JSON text to send: a Map is an object (its keys may repeat or be `__proto__`), Raw is sent as written. */
class Raw {
  constructor(readonly text: string) {}
}
type Json = string | number | boolean | null | Raw | Json[] | Map<string, Json>;

function jsonText(value: Json): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map(jsonText).join(",")}]`;
  if (value instanceof Map) return `{${[...value].map(([k, v]) => `${JSON.stringify(k)}:${jsonText(v)}`).join(",")}}`;
  return JSON.stringify(value) ?? "null";
}

/**
 * Hostility comes in doses: most leaves are plausible (so that a call gets
 * past decoding to the rules, the handlers and the database), and some are
 * the hostile cases: unpaired surrogates and control characters, operator
 * and prototype keys, numbers beyond 2^53 or spelled in hex, deep nesting.
 */
const char = fc.oneof(
  { weight: 40, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
  fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code)),
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      "\u0000",
      "\ufffd",
      "\ufeff",
      "\u202e",
      "\u0301",
      "$",
      ".",
      "_",
      "\\",
      '"',
      "😀",
      "Ⅻ",
      "İ",
    ),
  },
);
const hostileText = fc.string({ unit: char, maxLength: 24 });
const text = fc.oneof({ weight: 3, arbitrary: fc.string({ unit: "grapheme-ascii", maxLength: 12 }) }, hostileText);
const key = fc.oneof(
  { weight: 4, arbitrary: text },
  fc.constantFrom("__proto__", "constructor", "prototype", "$gt", "$where", "$set", "a.b", "", "_id", "toString"),
);
const number = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: -1000, max: 1000 }) },
  fc.integer(),
  fc.double(),
  fc.constantFrom(2 ** 53, 2 ** 53 + 2, -(2 ** 64), 1e308, 5e-324, -0, 0.1, 4294967296, -1),
  fc.constantFrom("9007199254740993", "1e400", "-1e-400", "12345678901234567890123").map((n) => new Raw(n)),
);
const numberText = fc.constantFrom(
  "0x2a",
  "0b1",
  "1e3",
  "-0",
  "Infinity",
  "NaN",
  " 42",
  "+1",
  "4_2",
  "99999999999999999999",
);
const leaf: fc.Arbitrary<Json> = fc.oneof(
  { weight: 3, arbitrary: text },
  { weight: 3, arbitrary: number },
  numberText,
  fc.boolean(),
  fc.constant(null),
);
const deep = fc
  .tuple(fc.integer({ min: 50, max: 3_000 }), fc.constantFrom("[", '{"a":'))
  .map(([depth, open]) => new Raw(open.repeat(depth) + "1" + (open === "[" ? "]" : "}").repeat(depth)));
const { value } = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    { weight: 8, arbitrary: leaf },
    { weight: 2, arbitrary: fc.array(tie("value"), { maxLength: 4 }) },
    {
      weight: 2,
      arbitrary: fc.array(fc.tuple(key, tie("value")), { maxLength: 4 }).map((entries) => new Map(entries)),
    },
  ),
}));

/** An object shaped like `schema` (any subset of its fields, by proto or JSON name), with hostile values and extra keys. */
function shaped(schema: DescMessage, depth: number): fc.Arbitrary<Json> {
  const fields = schema.fields.map((field) =>
    fc.tuple(fc.constantFrom(field.name, field.jsonName), fieldValue(field, depth)),
  );
  const known =
    fields.length > 0 ? fc.subarray(fields, { minLength: 1 }).chain((picked) => fc.tuple(...picked)) : fc.constant([]);
  // Unknown keys are refused whole; mostly leave them out so that calls get further.
  const extra = fc.oneof({ weight: 4, arbitrary: fc.constant([]) }, fc.array(fc.tuple(key, value), { maxLength: 2 }));
  return fc.tuple(known, extra).map(([a, b]) => new Map<string, Json>([...a, ...b]));
}

/** Mostly a value of the field's type (so that the call gets past decoding to the rules and the handler), else anything. */
function fieldValue(field: DescField, depth: number): fc.Arbitrary<Json> {
  return fc.oneof({ weight: 20, arbitrary: typedValue(field, depth) }, value, deep);
}

function typedValue(field: DescField, depth: number): fc.Arbitrary<Json> {
  switch (field.fieldKind) {
    case "scalar":
      return scalarValue(field.scalar);
    case "enum":
      return fc.oneof(fc.constantFrom(...field.enum.values.map((v) => v.name)), fc.integer());
    case "message":
      return messageValue(field.message, depth);
    case "list":
      return fc.array(
        field.listKind === "scalar"
          ? scalarValue(field.scalar)
          : field.listKind === "message"
            ? messageValue(field.message, depth)
            : value,
        { minLength: 1, maxLength: 3 },
      );
    case "map": {
      const item = field.mapKind === "scalar" ? scalarValue(field.scalar) : value;
      return fc.array(fc.tuple(key, item), { maxLength: 4 }).map((entries) => new Map(entries));
    }
  }
}

function scalarValue(type: ScalarType): fc.Arbitrary<Json> {
  if (type === ScalarType.STRING) {
    const words = fc.constantFrom("any", "all", "private", "public", "platform", "admin", "team_a", "vip");
    return fc.oneof({ weight: 3, arbitrary: text }, fc.uuid(), words);
  }
  if (type === ScalarType.BOOL) return fc.boolean();
  return fc.oneof({ weight: 8, arbitrary: fc.integer({ min: -2, max: 120 }) }, number, numberText);
}

function messageValue(schema: DescMessage, depth: number): fc.Arbitrary<Json> {
  switch (schema.typeName) {
    case "google.protobuf.Struct":
      return fc.array(fc.tuple(key, value), { maxLength: 5 }).map((entries) => new Map(entries));
    case "google.protobuf.ListValue":
      return fc.array(value, { maxLength: 5 });
    case "google.protobuf.Timestamp":
      return fc.oneof(
        text,
        fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      );
    default:
      if (schema.typeName.startsWith("google.protobuf.")) return value;
      return depth < 3 ? shaped(schema, depth + 1) : fc.constant(new Map<string, Json>());
  }
}

/** The bytes sent: mostly the JSON, sometimes with a byte made invalid UTF-8, or not JSON at all, or too big. */
function body(schema: DescMessage): fc.Arbitrary<Uint8Array<ArrayBuffer>> {
  const encode = (text: string) => new TextEncoder().encode(text);
  const json = fc.oneof({ weight: 8, arbitrary: shaped(schema, 0) }, value).map((v) => encode(jsonText(v)));
  const corrupted = fc
    .tuple(json, fc.nat(), fc.constantFrom(0xff, 0xc0, 0x80, 0xed, 0xf8))
    .map(([bytes, at, byte]) => bytes.map((b, i) => (i === at % bytes.length ? byte : b)));
  const oversized = fc.constant(encode(`{"x":"${"x".repeat(MAX_BODY_BYTES)}"}`));
  return fc.oneof(
    { weight: 24, arbitrary: json },
    { weight: 2, arbitrary: corrupted },
    { weight: 2, arbitrary: hostileText.map(encode) },
    oversized,
  );
}

const contentType = fc.oneof(
  { weight: 10, arbitrary: fc.constant("application/json") },
  fc.constantFrom(
    undefined,
    "text/plain",
    "application/json; charset=latin1",
    "application/grpc",
    "application/x-www-form-urlencoded",
  ),
);

interface Route {
  method: DescMethod;
  verb: string;
  path: string;
}

const routes: Route[] = SERVICES.flatMap((service) =>
  service.methods.map((method) => {
    const { case: verb, value } = getOption(method, httpRule).pattern;
    return { method, verb: String(verb).toUpperCase(), path: String(value) };
  }),
);

let svc: TestService;
let keys: Record<string, string | undefined>;
let victim: Awaited<ReturnType<TestService["createProject"]>>;
/** Endpoints whose handler is not built yet answer 501 to a valid call; that 5xx, and no other, is theirs to give. */
const unbuilt = new Set<string>();

const send = (route: Route, bytes: Uint8Array<ArrayBuffer> | undefined, type: string | undefined) => {
  const headers: Record<string, string> = {};
  if (type !== undefined) headers["content-type"] = type;
  const key = keys[requiredScope(route.method)];
  if (key !== undefined) headers["x-api-key"] = key;
  // A Blob without a type sends no Content-Type, which a Uint8Array body would not guarantee.
  return fetch(svc.baseUrl + route.path, {
    method: route.verb,
    headers,
    body: route.verb === "GET" ? undefined : new Blob([bytes ?? new Uint8Array()]),
  });
};

async function victimData() {
  const read = (path: string, body: object) => svc.postJson(path, body, victim.privateKey).then((r) => r.body);
  return {
    players: await read("/v1/players/search", { page_size: 100 }),
    tags: await read("/v1/players/tags", { page_size: 100 }),
  };
}

beforeAll(async () => {
  svc = await startTestService();
  victim = await svc.createProject("Victim");
  const attacker = await svc.createProject("Attacker");
  const { key: platformKey } = await svc.createKey("platform");
  keys = {
    admin: ADMIN_KEY,
    "launch:issue": platformKey,
    "launch:verify": attacker.privateKey,
    "events:write": attacker.privateKey,
    "events:read": attacker.privateKey,
    public: undefined,
  };
  const seeded = await svc.postJson(
    "/v1/players/update",
    {
      players: [
        { partner_user_id: "v-1", tags_add: ["Team A"], traits: { level: 3, name: "Ana" } },
        { device_id: "v-device", tags_add: ["guest"], traits_increment: { runs: 2 } },
      ],
    },
    victim.publicKey,
  );
  expect(seeded.status).toBe(200);
  for (const route of routes) {
    const res = await send(route, new TextEncoder().encode("{}"), "application/json");
    if (res.status === 501) unbuilt.add(route.path);
  }
});
afterAll(() => svc.stop());

/** Answers by status over all endpoints, to check that the runs got past the early refusals. */
const seen = new Map<number, number>();

async function answersWell(route: Route, bytes: Uint8Array<ArrayBuffer>, type: string | undefined): Promise<void> {
  const res = await send(route, bytes, type);
  const answer = await res.text();
  seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
  const sent = new TextDecoder().decode(bytes).slice(0, 300);
  const context = `${route.path} (${type}) ${sent}: ${res.status} ${answer.slice(0, 300)}`;
  if (res.status === 501 && unbuilt.has(route.path)) return;
  expect(res.status < 500, context).toBe(true);
  if (res.status === 200 && res.headers.get("content-type") === "application/x-ndjson") {
    // A stream (players/export): each line an object, possibly none.
    for (const line of answer.split("\n").slice(0, -1)) expect(JSON.parse(line), context).toBeTypeOf("object");
    return;
  }
  const json = JSON.parse(answer);
  if (res.status >= 400) {
    expect(Object.keys(json).sort(), context).toEqual(["code", "message"]);
    expect(typeof json.code === "string" && typeof json.message === "string", context).toBe(true);
  } else {
    expect(typeof json === "object" && json !== null && !Array.isArray(json), context).toBe(true);
  }
}

describe("hostile JSON at every /v1 endpoint", () => {
  let before: Awaited<ReturnType<typeof victimData>>;
  beforeAll(async () => {
    before = await victimData();
  });

  // At most 2.5 s an endpoint (15 endpoints): the whole file stays within a minute.
  for (const route of routes) {
    it(`${route.verb} ${route.path}: a 2xx, or a 4xx in the error shape; never a 5xx`, async () => {
      await fc.assert(
        fc.asyncProperty(body(route.method.input), contentType, (bytes, type) => answersWell(route, bytes, type)),
        { numRuns: 100, interruptAfterTimeLimit: 2_500 },
      );
    });
  }

  it("changed nothing of another project, and the service still answers", async () => {
    expect(await victimData()).toEqual(before);
    expect((await fetch(`${svc.baseUrl}/healthz`)).status).toBe(200);
    // Most calls got past the early refusals (415, 413, JSON syntax) to the rules and the handlers.
    expect(seen.get(200) ?? 0).toBeGreaterThan(100);
    expect(seen.get(400) ?? 0).toBeGreaterThan(100);
  });
});
