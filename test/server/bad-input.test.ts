import { gzipSync } from "node:zlib";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlayerService } from "../../gen/platformapi/v1/players_pb.js";
import { expectError, jsonHeaders, rawGrpcCall, rawPost } from "../support/service/raw-requests.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

/** Input that used to be accepted and quietly changed: prototype keys, bad text, non-decimal numbers, huge numbers. */

let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;
let n = 0;
const player = () => `bad-input-${++n}`;

beforeAll(async () => {
  svc = await startTestService();
  project = await svc.createProject();
});
afterAll(() => svc.stop());

const raw = (path: string, body: string | Uint8Array<ArrayBuffer>, headers: Record<string, string>) =>
  rawPost(svc.baseUrl + path, body, headers);
const asJson = jsonHeaders;

async function getPlayer(partnerUserId: string) {
  const res = await svc.postJson("/v1/players/get", { partner_user_id: partnerUserId }, project.privateKey);
  expect(res.status).toBe(200);
  return res.body;
}

describe("trait keys that name an object's built-in properties", () => {
  const RESERVED = ["__proto__", "constructor", "prototype"];

  it("are dropped with reason reserved_name from every trait field over /v1", async () => {
    const id = player();
    const traits = `{"__proto__": 1, "constructor": "c", "prototype": true, "kept": 1}`;
    const body = `{"players": [{"partner_user_id": "${id}", "traits": ${traits}, "traits_once": ${traits},
      "traits_increment": {"__proto__": 1, "constructor": 2, "prototype": 3}, "traits_unset": ${JSON.stringify(RESERVED)}}]}`;
    const res = await raw("/v1/players/update", body, asJson(project.publicKey));
    expect(res.status).toBe(200);
    const dropped = res.body.updated[0].dropped;
    for (const field of ["traits", "traits_once", "traits_increment", "traits_unset"]) {
      for (const item of RESERVED) expect(dropped).toContainEqual({ field, item, reason: "reserved_name" });
    }
    expect((await getPlayer(id)).profile.traits).toEqual({ kept: 1 });
  });

  it("are dropped with a reason over Connect and gRPC too", async () => {
    for (const protocol of ["connect", "grpc"] as const) {
      const id = player();
      const res = await svc
        .client(PlayerService, protocol)
        .update(
          { players: [{ partnerUserId: id, traits: { constructor: 1, prototype: "p", kept: true } }] },
          { headers: { "x-api-key": project.publicKey } },
        );
      expect(res.updated[0].dropped.map((d) => [d.item, d.reason]).sort()).toEqual([
        ["constructor", "reserved_name"],
        ["prototype", "reserved_name"],
      ]);
      expect((await getPlayer(id)).profile.traits).toEqual({ kept: true });
    }
  });

  it("are dropped with a reason from a Connect JSON body, where the JSON reader would lose __proto__", async () => {
    const id = player();
    const body = `{"players": [{"partner_user_id": "${id}", "traits": {"__proto__": 1, "kept": 1}}]}`;
    const res = await raw("/platformapi.v1.PlayerService/Update", body, asJson(project.publicKey));
    expect(res.status).toBe(200);
    expect(res.body.updated[0].dropped).toEqual([{ field: "traits", item: "__proto__", reason: "reserved_name" }]);
    expect((await getPlayer(id)).profile.traits).toEqual({ kept: 1 });
  });

  it("make a search or chart filter unusable: 400 naming traits, never an answer with everyone", async () => {
    await svc.postJson(
      "/v1/players/update",
      { players: [{ partner_user_id: player(), tags_add: ["x"] }] },
      project.publicKey,
    );
    const range = `"from": "2026-01-01", "to": "2026-01-02"`;
    for (const key of RESERVED) {
      for (const [path, body] of [
        ["/v1/players/search", `{"traits": {"${key}": "x"}}`],
        ["/platformapi.v1.PlayerService/Search", `{"traits": {"${key}": "x"}}`],
        ["/v1/events/trends", `{${range}, "traits": {"${key}": "x"}}`],
        ["/platformapi.v1.EventService/Trends", `{${range}, "traits": {"${key}": "x"}}`],
        ["/v1/events/names", `{${range}, "traits": {"${key}": "x"}}`],
      ]) {
        const res = await raw(path, body, asJson(project.privateKey));
        expectError(res, 400, "invalid_argument", "traits");
      }
    }
  });
});

describe("invalid UTF-8 and unpaired surrogates", () => {
  const INVALID = [
    [0xff],
    [0xc3, 0x28],
    [0xed, 0xa0, 0x80], // an encoded surrogate
  ];
  const utf8 = (text: string) => new TextEncoder().encode(text);
  /** `{"players":[{"partner_user_id":"p<bytes>","tags_add":["t"]}]}` with raw bytes inside the id. */
  const updateWith = (bytes: number[]) =>
    new Uint8Array([...utf8('{"players":[{"partner_user_id":"p'), ...bytes, ...utf8('","tags_add":["t"]}]}')]);

  it("answer 400 on /v1 and store nothing, so different bytes never collapse into one player", async () => {
    for (const bytes of INVALID) {
      const res = await raw("/v1/players/update", updateWith(bytes), asJson(project.publicKey));
      expectError(res, 400, "invalid_argument");
    }
    expect((await getPlayer("p\ufffd")).found).toBe(false);
  });

  it("answer 400 over Connect JSON", async () => {
    const res = await raw("/platformapi.v1.PlayerService/Update", updateWith([0xff]), asJson(project.publicKey));
    expectError(res, 400, "invalid_argument");
    expect((await getPlayer("p\ufffd")).found).toBe(false);
  });

  it("answer invalid_argument (not internal) over Connect binary and gRPC", async () => {
    // GetRequest {partner_user_id (field 1, length-delimited): "p\xff"}
    const message = [0x0a, 0x02, 0x70, 0xff];
    const res = await raw("/platformapi.v1.PlayerService/Get", new Uint8Array(message), {
      "content-type": "application/proto",
      "x-api-key": project.privateKey,
    });
    expectError(res, 400, "invalid_argument", "partner_user_id");
    // The same message in a gRPC frame.
    const trailers = await rawGrpcCall(svc.baseUrl, "/platformapi.v1.PlayerService/Get", Uint8Array.from(message), {
      "x-api-key": project.privateKey,
    });
    expect(trailers["grpc-status"]).toBe(String(Code.InvalidArgument));
  });

  it("refuse an unpaired surrogate escape, which storage would turn into U+FFFD", async () => {
    const body = `{"players":[{"partner_user_id":"p\\ud800","tags_add":["t"]}]}`;
    expectError(await raw("/v1/players/update", body, asJson(project.publicKey)), 400, "invalid_argument");
    const connect = await raw("/platformapi.v1.PlayerService/Update", body, asJson(project.publicKey));
    expectError(connect, 400, "invalid_argument");
    expect((await getPlayer("p\ufffd")).found).toBe(false);
  });
});

describe("numbers in JSON are decimal", () => {
  it('refuses "0x2a" and other non-decimal spellings for game_id and page, naming the field', async () => {
    for (const spelling of ["0x2a", "0o52", "0b101010", "+42", "42abc", " 42"]) {
      const created = await svc.postJson("/v1/admin/projects", { name: "hex", game_id: spelling }, ADMIN_KEY);
      expectError(created, 400, "invalid_argument", "game_id");
      const search = await svc.postJson("/v1/players/search", { page: spelling }, project.privateKey);
      expectError(search, 400, "invalid_argument", "page");
      const connect = await raw(
        "/platformapi.v1.PlayerService/Search",
        JSON.stringify({ page: spelling }),
        asJson(project.privateKey),
      );
      expectError(connect, 400, "invalid_argument", "page");
    }
  });

  it("refuses them in a gzip-compressed Connect JSON body too", async () => {
    const res = await raw("/platformapi.v1.PlayerService/Search", gzipSync('{"page": "0x2a"}'), {
      ...asJson(project.privateKey),
      "content-encoding": "gzip",
    });
    expectError(res, 400, "invalid_argument", "page");
  });

  it("accepts decimal numbers and decimal strings", async () => {
    const gameId = 4_200_000_000 + Math.floor(Math.random() * 1_000_000);
    const created = await svc.postJson("/v1/admin/projects", { name: "dec", game_id: String(gameId) }, ADMIN_KEY);
    expect(created.status).toBe(200);
    expect(created.body.project.game_id).toBe(gameId);
    for (const page of [2, "2"]) {
      const search = await svc.postJson("/v1/players/search", { page }, project.privateKey);
      expect(search.status).toBe(200);
      expect(search.body.players_info.page).toBe(2);
    }
  });
});

describe("integer trait values beyond 2^53", () => {
  it("are dropped with a reason, never rounded, over /v1 and Connect", async () => {
    const id = player();
    const body = `{"players":[{"partner_user_id":"${id}","traits":{"big":9007199254740993,"neg":-9007199254740993,"safe":9007199254740991}}]}`;
    const res = await raw("/v1/players/update", body, asJson(project.publicKey));
    expect(res.status).toBe(200);
    expect(res.body.updated[0].dropped).toEqual([
      { field: "traits", item: "big", reason: "out_of_range" },
      { field: "traits", item: "neg", reason: "out_of_range" },
    ]);
    const connect = await raw(
      "/platformapi.v1.PlayerService/Update",
      body.replace(id, `${id}-c`),
      asJson(project.publicKey),
    );
    expect(connect.body.updated[0].dropped.map((d: any) => d.reason)).toEqual(["out_of_range", "out_of_range"]);
    expect((await getPlayer(id)).profile.traits).toEqual({ safe: 9007199254740991 });
  });

  it("are dropped with a reason as increments too", async () => {
    const id = player();
    const body = `{"players":[{"partner_user_id":"${id}","traits_increment":{"big":9007199254740993,"one":1}}]}`;
    const res = await raw("/v1/players/update", body, asJson(project.publicKey));
    expect(res.body.updated[0].dropped).toEqual([{ field: "traits_increment", item: "big", reason: "out_of_range" }]);
    expect((await getPlayer(id)).profile.traits).toEqual({ one: 1 });
  });

  it("drop an increment whose sum would pass 2^53 − 1, keeping the trait as it was", async () => {
    const id = player();
    const set = `{"players":[{"partner_user_id":"${id}","traits":{"near":9007199254740990,"low":-9007199254740990}}]}`;
    expect((await raw("/v1/players/update", set, asJson(project.publicKey))).status).toBe(200);
    const body = `{"players":[{"partner_user_id":"${id}","traits_increment":{"near":2,"low":-2,"one":1}}]}`;
    const res = await raw("/v1/players/update", body, asJson(project.publicKey));
    expect(res.status).toBe(200);
    expect(res.body.updated[0].dropped).toEqual([
      { field: "traits_increment", item: "near", reason: "out_of_range" },
      { field: "traits_increment", item: "low", reason: "out_of_range" },
    ]);
    expect((await getPlayer(id)).profile.traits).toEqual({ near: 9007199254740990, low: -9007199254740990, one: 1 });
    const last = `{"players":[{"partner_user_id":"${id}","traits_increment":{"near":1}}]}`;
    expect((await raw("/v1/players/update", last, asJson(project.publicKey))).body.updated[0].dropped).toEqual([]);
    expect((await getPlayer(id)).profile.traits.near).toBe(9007199254740991);
  });
});

const GET_PATH = "/platformapi.v1.PlayerService/Get";
// Field 1, length-delimited, with a length varint that never ends.
const MALFORMED = Uint8Array.from([0x0a, 0xff]);
const DECODE_MESSAGE = /^the body could not be decoded as platformapi\.v1\.GetRequest: /;

/** One gRPC message frame: uncompressed flag, big-endian length, the bytes. */
const frame = (message: Uint8Array) => Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), message]);

/** A raw gRPC-Web call; resolves to the trailer frame at the end of its body, as header lines. */
async function grpcWebCall(body: Buffer): Promise<Record<string, string>> {
  const res = await fetch(svc.baseUrl + GET_PATH, {
    method: "POST",
    headers: { "content-type": "application/grpc-web+proto", "x-api-key": project.privateKey },
    body: new Uint8Array(body),
  });
  expect(res.status).toBe(200);
  const bytes = Buffer.from(await res.arrayBuffer());
  expect(bytes[0]).toBe(0x80);
  const lines = bytes.subarray(5).toString("utf8").trim().split("\r\n");
  return Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1).trim()]),
  );
}

// A binary protobuf body that cannot be decoded is the caller's fault on every protocol (issue 24, item 6).
describe("an undecodable binary body", () => {
  it("is 400 invalid_argument on Connect, naming the message, plain or gzipped, whatever the key", async () => {
    for (const [body, headers] of [
      [MALFORMED, { "x-api-key": project.privateKey }],
      [gzipSync(MALFORMED), { "x-api-key": project.privateKey, "content-encoding": "gzip" }],
      [MALFORMED, {}],
    ] as const) {
      const res = await fetch(svc.baseUrl + GET_PATH, {
        method: "POST",
        headers: { "content-type": "application/proto", ...headers },
        body: new Uint8Array(body),
      });
      const answer = { status: res.status, body: await res.json() };
      expectError(answer, 400, "invalid_argument");
      expect(answer.body.message).toMatch(DECODE_MESSAGE);
    }
  });

  it("is status 3 on gRPC", async () => {
    const trailers = await rawGrpcCall(svc.baseUrl, GET_PATH, MALFORMED, { "x-api-key": project.privateKey });
    expect(trailers["grpc-status"]).toBe("3");
    expect(decodeURIComponent(String(trailers["grpc-message"]))).toMatch(DECODE_MESSAGE);
  });

  it("is status 3 on gRPC-Web", async () => {
    const trailers = await grpcWebCall(frame(MALFORMED));
    expect(trailers["grpc-status"]).toBe("3");
    expect(decodeURIComponent(trailers["grpc-message"])).toMatch(DECODE_MESSAGE);
  });

  it("is status 3 on gRPC-Web when the undecodable message is the second of two", async () => {
    const trailers = await grpcWebCall(Buffer.concat([frame(new Uint8Array(0)), frame(MALFORMED)]));
    expect(trailers["grpc-status"]).toBe("3");
    expect(decodeURIComponent(trailers["grpc-message"])).toMatch(DECODE_MESSAGE);
  });

  it("leaves a decodable binary body to the call: a well-formed request is answered as before", async () => {
    // An empty GetRequest decodes; it is then refused by the proto's rules, not as undecodable.
    const trailers = await rawGrpcCall(svc.baseUrl, GET_PATH, new Uint8Array(0), { "x-api-key": project.privateKey });
    expect(trailers["grpc-status"]).toBe("3");
    expect(decodeURIComponent(String(trailers["grpc-message"]))).not.toMatch(DECODE_MESSAGE);
  });
});
