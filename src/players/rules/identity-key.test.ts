import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareKeys, mergeKeys, sortKeys } from "./identity-key.js";

const byUtf8 = (a: string, b: string) => Math.sign(Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")));

describe("compareKeys", () => {
  it("orders by code point, as MongoDB does: U+FFFD before an emoji, though its UTF-16 unit is larger", () => {
    const keys = ["u:\u{1F600}", "u:\uFFFD", "u:\uE000", "u:z", "u:"];
    expect([...keys].sort(compareKeys)).toEqual(["u:", "u:z", "u:\uE000", "u:\uFFFD", "u:\u{1F600}"]);
  });

  it("agrees with a comparison of the UTF-8 bytes on any strings", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.string({ unit: "binary" }), (a, b) => {
        expect(Math.sign(compareKeys(a, b))).toBe(byUtf8(a, b));
      }),
      { numRuns: 2_000 },
    );
  });
});

describe("sortKeys", () => {
  it("sorts as compareKeys does, with and without keys above U+D7FF", () => {
    const key = fc.oneof(fc.string({ unit: "binary" }), fc.string({ unit: "grapheme-ascii" }));
    fc.assert(
      fc.property(fc.array(key), (keys) => {
        expect(sortKeys([...keys])).toEqual([...keys].sort(compareKeys));
      }),
      { numRuns: 1_000 },
    );
  });
});

describe("mergeKeys", () => {
  it("answers the first keys of disjoint sorted lists as a sort of them all would", () => {
    const key = fc.oneof(fc.string({ unit: "binary" }), fc.string({ unit: "grapheme-ascii" }));
    fc.assert(
      fc.property(fc.uniqueArray(key), fc.integer({ min: 1, max: 8 }), fc.nat(40), (keys, lists, limit) => {
        const split = Array.from({ length: lists }, (_, i) => sortKeys(keys.filter((_, k) => k % lists === i)));
        expect(mergeKeys(split, limit)).toEqual(sortKeys([...keys]).slice(0, limit));
        expect(mergeKeys(split)).toEqual(sortKeys([...keys]));
      }),
      { numRuns: 500 },
    );
  });
});
