import { BSON } from "mongodb";
import { describe, expect, it } from "vitest";
import { monthsCodec } from "../../src/events/activity/activity-store.js";
import { MAX_EVENTS_PER_CALL, MAX_IDENTITY_CHARS, MAX_PROPERTIES_BYTES } from "../../src/events/queue/entries.js";
import { packEvents } from "../../src/events/queue/segment-store.js";
import { MAX_SUMMED_PROPERTIES } from "../../src/events/reads/sums.js";
import { columnCodec, COLUMN_BITS } from "../../src/players/cohorts/trait-columns.js";
import { MAX_TRAIT_STRING_CHARS } from "../../src/players/rules/normalise.js";
import { MAX_TAGS_PER_PROJECT, MAX_TRAIT_KEYS_PER_PROJECT } from "../../src/players/rounds/registration.js";
import { keyChunkCodec, KEY_CHUNK_BITS } from "../../src/sets/player-numbers.js";

// No document the service writes can pass MongoDB's 16 MiB at the configured limits: each store's largest, made by
// its own encoder (the activity chunks' in src/events/activity/activity-chunk.test.ts).
const MIB16 = 16 * 2 ** 20;
const size = (doc: object) => BSON.calculateObjectSize(doc);
/** A string of `n` characters that JSON escapes each as six ("\u0001"): the worst a value can grow to. */
const worst = (n: number) => "\u0001".repeat(n);

describe("the largest document of each store", () => {
  it("a trait column's chunk: every player of it holding a value of the longest, each character escaped", () => {
    const column = new Map(
      Array.from({ length: 2 ** COLUMN_BITS }, (_, i) => [i, JSON.stringify(worst(MAX_TRAIT_STRING_CHARS))]),
    );
    expect(size(columnCodec.encode(column))).toBeLessThan(MIB16);
  });

  it("a chunk of the numbers' keys: every number's key of the longest id, escaped", () => {
    const keys = Array.from({ length: 2 ** KEY_CHUNK_BITS }, () => `u:${worst(MAX_IDENTITY_CHARS)}`);
    expect(size(keyChunkCodec.encode(keys))).toBeLessThan(MIB16);
  });

  it("a month of the activity index: 31 days of 1,000 names of 64 characters and the project's 20 sums", () => {
    const names = Array.from({ length: 1_000 }, (_, i) => `n${i}`.padEnd(64, "x"));
    const series = [...names, ...names.slice(0, MAX_SUMMED_PROPERTIES).map((name, s) => `${name}/${s + 1}`)];
    const month = new Map(
      Array.from({ length: 31 }, (_, d) => [`2026-12-${String(d + 1).padStart(2, "0")}`, new Set(series)]),
    );
    expect(size(monthsCodec.encode(month))).toBeLessThan(MIB16);
  });

  it("a segment of an ingest call: 1,000 events with the longest ids and 8 KiB of properties each", () => {
    const event = {
      n: "x".repeat(64),
      u: worst(MAX_IDENTITY_CHARS),
      d: worst(MAX_IDENTITY_CHARS),
      t: new Date(),
      i: worst(128),
      p: JSON.stringify({ p: worst(MAX_PROPERTIES_BYTES / 6) }),
    };
    const packed = packEvents(Array.from({ length: MAX_EVENTS_PER_CALL }, () => event));
    expect(size({ work: { kind: "events", packed } })).toBeLessThan(MIB16);
  });

  it("a round's intent: 100 players of the longest ids, every tag and trait key of the project", () => {
    const intent = {
      players: Array.from({ length: 100 }, (_, i) => ({ key: `u:${i}${worst(MAX_IDENTITY_CHARS)}`, number: i })),
      tags: Array.from({ length: MAX_TAGS_PER_PROJECT }, (_, i) => `t${i}`.padEnd(64, "x")),
      trait_keys: Array.from({ length: MAX_TRAIT_KEYS_PER_PROJECT }, (_, i) => `k${i}`.padEnd(64, "x")),
    };
    expect(size(intent)).toBeLessThan(MIB16);
  });
});
