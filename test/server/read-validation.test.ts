import { fromJson, type DescMessage, type DescService, type JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventService } from "../../gen/platformapi/v1/events_pb.js";
import { PlayerService } from "../../gen/platformapi/v1/players_pb.js";
import { eventTimes } from "../support/service/events.js";
import { expectError } from "../support/service/raw-requests.js";
import { startTestService, type TestService } from "../support/service/service.js";

/**
 * Every read that takes a date range, event names, tags or traits reads them one way (src/events/reads/query.ts and
 * the proto's rules): the same input gets the same 400 `invalid_argument` naming the same field from trends, names,
 * retention, active, search and export, over /v1 JSON, Connect, gRPC and gRPC-Web.
 */
let svc: TestService;
let key: string;
let range: { from: string; to: string };
beforeAll(async () => {
  svc = await startTestService();
  key = (await svc.createProject()).privateKey;
  const [first, last] = eventTimes(svc, 2);
  range = { from: first.day, to: last.day };
});
afterAll(() => svc.stop());

interface Read {
  path: string;
  service: DescService;
  method: string;
  /** Takes from and to. */
  range?: true;
  /** Takes event names. */
  names?: true;
  /** The enumerations it takes beyond tags_match. */
  choices: ("interval" | "split_by" | "mode")[];
}

const READS: Record<string, Read> = {
  trends: {
    path: "/v1/events/trends",
    service: EventService,
    method: "trends",
    range: true,
    names: true,
    choices: ["interval", "split_by"],
  },
  names: { path: "/v1/events/names", service: EventService, method: "listNames", range: true, choices: [] },
  retention: {
    path: "/v1/events/retention",
    service: EventService,
    method: "retention",
    range: true,
    choices: ["interval", "split_by", "mode"],
  },
  active: {
    path: "/v1/events/active",
    service: EventService,
    method: "active",
    range: true,
    names: true,
    choices: ["split_by"],
  },
  search: { path: "/v1/players/search", service: PlayerService, method: "search", choices: [] },
  export: { path: "/v1/players/export", service: PlayerService, method: "export", choices: [] },
};

const many = (prefix: string) => Array.from({ length: 51 }, (_, i) => `${prefix}${i}`);

/** A case: what is sent beside a valid request, the field the message starts with, and the reads that take it. */
const CASES: [string, JsonObject, string, (read: Read) => boolean][] = [
  ["a name with a NUL", { names: ["a\u0000"] }, "names", (read) => !!read.names],
  ["an empty name", { names: [""] }, "names", (read) => !!read.names],
  ["51 names", { names: many("n") }, "names", (read) => !!read.names],
  ["an empty tag", { tags: [""] }, "tags", () => true],
  ["a tag with a NUL", { tags: ["a\u0000"] }, "tags", () => true],
  ["51 tags", { tags: many("t") }, "tags", () => true],
  ["a reserved tag to leave out", { tags_none: ["_x"] }, "tags_none", () => true],
  ["51 tags to leave out", { tags_none: many("t") }, "tags_none", () => true],
  ["51 traits", { traits: Object.fromEntries(many("k").map((k) => [k, 1])) }, "traits", () => true],
  ["a reserved trait key", { traits: { _k: 1 } }, "traits", () => true],
  ["a trait of null", { traits: { k: null } }, "traits", () => true],
  ["tags_match empty", { tags_match: "" }, "tags_match", () => true],
  ["tags_match of another word", { tags_match: "some" }, "tags_match", () => true],
  ["interval empty", { interval: "" }, "interval", (read) => read.choices.includes("interval")],
  ["split_by empty", { split_by: "" }, "split_by", (read) => read.choices.includes("split_by")],
  ["mode empty", { mode: "" }, "mode", (read) => read.choices.includes("mode")],
  ["no from", { from: "" }, "from", (read) => !!read.range],
  ["a from of year 0", { from: "0000-01-01" }, "from", (read) => !!read.range],
  ["a day that does not exist", { to: "2026-02-30" }, "to", (read) => !!read.range],
  ["from after to", { from: "2026-01-10", to: "2026-01-01" }, "from", (read) => !!read.range],
];

/** The refusal over Connect, gRPC or gRPC-Web: its code and message; a server stream's comes with its first message. */
async function refusal(read: Read, body: JsonObject, protocol: "connect" | "grpc" | "grpc-web") {
  const client = svc.client(read.service, protocol) as unknown as Record<string, (...args: unknown[]) => unknown>;
  const input = (read.service.method as Record<string, { input: DescMessage }>)[read.method].input;
  const options = { headers: { "x-api-key": key } };
  const call = client[read.method](fromJson(input, body), options);
  try {
    if (Symbol.asyncIterator in (call as object)) await (call as AsyncIterable<unknown>)[Symbol.asyncIterator]().next();
    else await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error(`${read.method} over ${protocol} accepted ${JSON.stringify(body)}`);
}

describe("a read's range, names, tags and traits", () => {
  it("are refused alike by every read that takes them, over every protocol, naming the field", async () => {
    let checked = 0;
    for (const [name, extra, field, takes] of CASES) {
      for (const read of Object.values(READS).filter(takes)) {
        const body = { ...(read.range && range), ...extra };
        const what = `${name}: ${read.path}`;
        const v1 = await svc.postJson(read.path, body, key);
        expect(v1.status, what).toBe(400);
        expectError(v1, 400, "invalid_argument", field);
        for (const protocol of ["connect", "grpc", "grpc-web"] as const) {
          const error = await refusal(read, body, protocol);
          expect([error.code, error.rawMessage], `${what} over ${protocol}`).toEqual([
            Code.InvalidArgument,
            expect.stringMatching(new RegExp(`^${field}\\b`)),
          ]);
          expect(error.rawMessage, `${what} over ${protocol}`).toBe(v1.body.message);
        }
        checked++;
      }
    }
    // 10 cases of tags and traits on 6 reads, 3 of names on 2, the choices where they apply, 4 of dates on 4.
    expect(checked).toBe(6 * 10 + 2 * 3 + 2 + 3 + 1 + 4 * 4);
  });

  it("are accepted when valid, by every read", async () => {
    const valid = { tags: ["Team A"], tags_match: "all", tags_none: ["churned"], traits: { tier: "gold" } };
    for (const read of Object.values(READS)) {
      const res = await svc.postJson(read.path, { ...(read.range && range), ...valid }, key);
      expect(res.status, read.path).toBe(200);
    }
  });
});
