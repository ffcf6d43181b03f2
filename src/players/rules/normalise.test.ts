import { describe, expect, it } from "vitest";
import {
  escapeRegex,
  normaliseNumber,
  normaliseTag,
  normaliseTraitKey,
  normaliseTraitValue,
  traitIndexEntry,
} from "./normalise.js";

describe("normaliseTag", () => {
  it("trims, lowercases and turns each whitespace character into _", () => {
    for (const raw of ["Team A", "team a", "team_a", "  TEAM A\t"])
      expect(normaliseTag(raw)).toEqual({ ok: true, value: "team_a" });
    expect(normaliseTag("a\tb  c")).toEqual({ ok: true, value: "a_b__c" });
    expect(normaliseTag("Season-1.2:x")).toEqual({ ok: true, value: "season-1.2:x" });
    expect(normaliseTag("Équipe")).toEqual({ ok: true, value: "équipe" });
  });

  it("drops empty, over-long, punctuated, _-prefixed and non-string tags", () => {
    expect(normaliseTag("   ")).toEqual({ ok: false, error: "empty" });
    expect(normaliseTag("x".repeat(65))).toEqual({ ok: false, error: "too_long" });
    expect(normaliseTag("x".repeat(64))).toMatchObject({ ok: true });
    for (const raw of ["vip!", "a/b", "$gt", "a,b", "{x}", "a\u0000b"]) {
      expect(normaliseTag(raw)).toEqual({ ok: false, error: "invalid_characters" });
    }
    expect(normaliseTag("_internal")).toEqual({ ok: false, error: "reserved_prefix" });
    expect(normaliseTag(" internal")).toMatchObject({ ok: true, value: "internal" });
    expect(normaliseTag(5)).toEqual({ ok: false, error: "not_a_string" });
  });
});

describe("normaliseTraitKey and normaliseTraitValue", () => {
  it("keeps the key's case and refuses reserved prefixes, dots and control characters", () => {
    expect(normaliseTraitKey("Level")).toEqual({ ok: true, value: "Level" });
    expect(normaliseTraitKey("_key")).toEqual({ ok: false, error: "reserved_prefix" });
    expect(normaliseTraitKey("$gt")).toEqual({ ok: false, error: "reserved_prefix" });
    expect(normaliseTraitKey("a.b")).toEqual({ ok: false, error: "invalid_characters" });
    expect(normaliseTraitKey("a\nb")).toEqual({ ok: false, error: "invalid_characters" });
    expect(normaliseTraitKey("")).toEqual({ ok: false, error: "empty" });
    expect(normaliseTraitKey("k".repeat(65))).toEqual({ ok: false, error: "too_long" });
  });

  it("refuses the names JavaScript gives objects", () => {
    for (const raw of ["__proto__", "constructor", "prototype"])
      expect(normaliseTraitKey(raw)).toEqual({ ok: false, error: "reserved_name" });
    expect(normaliseTraitKey("Constructor")).toEqual({ ok: true, value: "Constructor" });
  });

  it("keeps strings up to 1024 characters, finite numbers and booleans exactly", () => {
    expect(normaliseTraitValue(" A b ")).toEqual({ ok: true, value: " A b " });
    expect(normaliseTraitValue("x".repeat(1024))).toMatchObject({ ok: true });
    expect(normaliseTraitValue("x".repeat(1025))).toEqual({ ok: false, error: "value_too_long" });
    expect(normaliseTraitValue(-1.5)).toEqual({ ok: true, value: -1.5 });
    expect(normaliseTraitValue(false)).toEqual({ ok: true, value: false });
    expect(normaliseTraitValue(Infinity)).toEqual({ ok: false, error: "not_finite" });
    expect(normaliseTraitValue(Number.MAX_SAFE_INTEGER)).toEqual({ ok: true, value: Number.MAX_SAFE_INTEGER });
    expect(normaliseTraitValue(-Number.MAX_SAFE_INTEGER)).toMatchObject({ ok: true });
    for (const raw of [2 ** 53, -(2 ** 53), 1e300])
      expect(normaliseTraitValue(raw)).toEqual({ ok: false, error: "out_of_range" });
    for (const raw of [2 ** 53, 1e300]) expect(normaliseNumber(raw)).toEqual({ ok: false, error: "out_of_range" });
    expect(normaliseNumber(-0.5)).toEqual({ ok: true, value: -0.5 });
    for (const raw of [null, { $gt: "" }, [1], undefined])
      expect(normaliseTraitValue(raw)).toEqual({ ok: false, error: "invalid_value" });
  });

  it("encodes a trait for the index so that key and value cannot run into each other", () => {
    expect(traitIndexEntry("a", "b=c")).not.toBe(traitIndexEntry("a=b", "c"));
    expect(traitIndexEntry("level", 5)).not.toBe(traitIndexEntry("level", "5"));
  });

  it("escapes every regex metacharacter", () => {
    const text = ".*+?^${}()|[]\\/-";
    expect(new RegExp(escapeRegex(text)).test(text)).toBe(true);
    expect(new RegExp(escapeRegex(".*")).test("abc")).toBe(false);
  });
});
