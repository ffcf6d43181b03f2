import { create, fromBinary } from "@bufbuild/protobuf";
import { reflect } from "@bufbuild/protobuf/reflect";
import { describe, expect, it } from "vitest";
import { GetRequestSchema, UpdateRequestSchema } from "../../../gen/platformapi/v1/players_pb.js";
import { malformedTextPath, markInvalidUtf8 } from "./unicode.js";

const update = (init: Parameters<typeof create<typeof UpdateRequestSchema>>[1]) =>
  malformedTextPath(reflect(UpdateRequestSchema, create(UpdateRequestSchema, init)));

describe("malformedTextPath", () => {
  it("passes well-formed text, surrogate pairs and U+FFFD", () => {
    expect(update({ players: [{ partnerUserId: "😀 \ufffd é", traits: { ключ: "值" } }] })).toBeUndefined();
  });

  it("finds an unpaired surrogate in a string, a list, a map key or value, and a Struct", () => {
    expect(update({ players: [{}, { deviceId: "d\ud800" }] })).toBe("players[1].device_id");
    expect(update({ players: [{ tagsAdd: ["ok", "\udfff"] }] })).toBe("players[0].tags_add[1]");
    expect(update({ players: [{ traitsIncrement: { "k\ud800": 1 } }] })).toBe("players[0].traits_increment");
    expect(update({ players: [{ traits: { a: { b: ["\ud800x"] } } }] })).toMatch(/^players\[0\]\.traits\./);
  });
});

describe("markInvalidUtf8", () => {
  it("turns invalid UTF-8 in a proto3 string into text malformedTextPath finds, instead of an exception", () => {
    const bytes = new Uint8Array([0x0a, 0x02, 0x70, 0xff]); // GetRequest {partner_user_id: "p\xff"}
    expect(() => fromBinary(GetRequestSchema, bytes)).toThrow();
    markInvalidUtf8();
    markInvalidUtf8(); // once per process, however often it is called
    const message = fromBinary(GetRequestSchema, bytes);
    expect(malformedTextPath(reflect(GetRequestSchema, message))).toBe("partner_user_id");
    const valid = fromBinary(GetRequestSchema, new Uint8Array([0x0a, 0x02, 0x70, 0x71]));
    expect(valid.partnerUserId).toBe("pq");
  });
});
