import type { DescMessage } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { CreateProjectRequestSchema } from "../../../gen/platformapi/v1/admin_pb.js";
import { SearchRequestSchema, UpdateRequestSchema } from "../../../gen/platformapi/v1/players_pb.js";
import { parseJsonRequest } from "./json-request.js";

const utf8 = (text: string) => new TextEncoder().encode(text);
const parse = (
  text: string,
  schema: DescMessage = UpdateRequestSchema,
  type: string | undefined = "application/json",
) => parseJsonRequest(type, utf8(text), schema);

describe("parseJsonRequest", () => {
  it("accepts JSON with or without charset, and no Content-Type at all", () => {
    for (const type of [
      undefined,
      "application/json",
      "application/json; charset=utf-8",
      'APPLICATION/JSON;charset="UTF-8"',
    ])
      expect(parse("{}", UpdateRequestSchema, type)).toMatchObject({ ok: true });
  });

  it("refuses other media types and charsets with 415", () => {
    for (const type of ["text/plain", "application/jsonx", "application/json; charset=latin1", "application/grpc", ""])
      expect(parse("{}", UpdateRequestSchema, type)).toMatchObject({ ok: false, error: { status: 415 } });
  });

  it("refuses invalid UTF-8, malformed JSON and non-objects with 400", () => {
    const bad = parseJsonRequest("application/json", new Uint8Array([0x7b, 0xff, 0x7d]), UpdateRequestSchema);
    expect(bad).toEqual({ ok: false, error: { status: 400, message: "request body is not valid UTF-8" } });
    expect(parse('{"players": ')).toMatchObject({
      ok: false,
      error: { message: expect.stringMatching(/^malformed JSON/) },
    });
    expect(parse("[1]")).toMatchObject({ ok: false, error: { status: 400 } });
    expect(parse("")).toEqual({
      ok: true,
      value: { body: {}, protoKeyPaths: new Set(), unreadableTimestamps: new Set(), rewritten: false },
    });
  });

  it("lets numbers be decimal only, in strings too, naming the field", () => {
    for (const value of ["42", "042", 42, 1e3, "4294967295"])
      expect(parse(`{"game_id": ${JSON.stringify(value)}}`, CreateProjectRequestSchema)).toMatchObject({ ok: true });
    expect(parse('{"page": "-7"}', SearchRequestSchema)).toMatchObject({ ok: true });
    for (const value of ["-7", -1, "4294967296", 2 ** 32]) {
      expect(parse(`{"game_id": ${JSON.stringify(value)}}`, CreateProjectRequestSchema)).toEqual({
        ok: false,
        error: { status: 400, message: `game_id: ${JSON.stringify(value)} is out of range for uint32` },
      });
    }
    expect(parse('{"game_id": 1.5}', CreateProjectRequestSchema)).toMatchObject({ error: { message: /^game_id:/ } });
    for (const value of ["0x2a", "0b1", "0o7", "+1", " 1", "1 ", "1e3", "2.0", "Infinity", "NaN", "1_000", "٤٢"]) {
      expect(parse(`{"game_id": ${JSON.stringify(value)}}`, CreateProjectRequestSchema)).toEqual({
        ok: false,
        error: { status: 400, message: `game_id: ${JSON.stringify(value)} is not a decimal number` },
      });
    }
    expect(parse('{"pageSize": "0x10"}', SearchRequestSchema)).toMatchObject({ error: { message: /^page_size:/ } });
  });

  it("walks lists and maps: float spellings of NaN and Infinity stay, hex never", () => {
    const increments = (value: string) => `{"players": [{}, {"traits_increment": {"n": ${JSON.stringify(value)}}}]}`;
    for (const value of ["NaN", "Infinity", "-Infinity", "1.5", "-2e3"])
      expect(parse(increments(value))).toMatchObject({ ok: true });
    expect(parse(increments("0x1"))).toMatchObject({
      error: { message: 'players[1].traits_increment["n"]: "0x1" is not a decimal number' },
    });
  });

  it("reports the map and Struct fields that carry a __proto__ key, which protobuf-es would lose", () => {
    const body = `{"players": [{"traits": {"__proto__": 1}, "traitsIncrement": {"__proto__": 2}}, {"traits_once": {"a": {"__proto__": 1}}}]}`;
    const parsed = parse(body);
    expect(parsed.ok && [...parsed.value.protoKeyPaths]).toEqual(["players[0].traits", "players[0].traits_increment"]);
    const search = parse('{"traits": {"__proto__": "x"}}', SearchRequestSchema);
    expect(search.ok && [...search.value.protoKeyPaths]).toEqual(["traits"]);
  });
});
