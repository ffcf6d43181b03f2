import { describe, expect, it } from "vitest";
import { entryChains } from "../src/players/entry-chains.js";
import { KeyedLock } from "../src/players/keyed-lock.js";
import {
  escapeRegex,
  normaliseTag,
  normaliseTraitKey,
  normaliseTraitValue,
  traitIndexEntry,
} from "../src/players/normalise.js";
import {
  applyOperations,
  foldDevice,
  normaliseEntry,
  playerLimitBroken,
  tagCountDeltas,
  type EntryInput,
  type PlayerState,
} from "../src/players/operations.js";

const entry = (fields: Partial<EntryInput>): EntryInput => ({
  tagsAdd: [],
  tagsRemove: [],
  traitsIncrement: {},
  traitsUnset: [],
  ...fields,
});
const state = (tags: string[], traits: Record<string, string | number | boolean> = {}): PlayerState => ({
  tags,
  traits: new Map(Object.entries(traits)),
});

describe("normaliseTag", () => {
  it("trims, lowercases and turns each whitespace character into _", () => {
    for (const raw of ["Team A", "team a", "team_a", "  TEAM A\t"])
      expect(normaliseTag(raw)).toEqual({ ok: true, value: "team_a" });
    expect(normaliseTag("a\tb  c")).toEqual({ ok: true, value: "a_b__c" });
    expect(normaliseTag("Season-1.2:x")).toEqual({ ok: true, value: "season-1.2:x" });
    expect(normaliseTag("Équipe")).toEqual({ ok: true, value: "équipe" });
  });

  it("drops empty, over-long, punctuated, _-prefixed and non-string tags", () => {
    expect(normaliseTag("   ")).toEqual({ ok: false, reason: "empty" });
    expect(normaliseTag("x".repeat(65))).toEqual({ ok: false, reason: "too_long" });
    expect(normaliseTag("x".repeat(64))).toMatchObject({ ok: true });
    for (const raw of ["vip!", "a/b", "$gt", "a,b", "{x}", "a\u0000b"]) {
      expect(normaliseTag(raw)).toEqual({ ok: false, reason: "invalid_characters" });
    }
    expect(normaliseTag("_internal")).toEqual({ ok: false, reason: "reserved_prefix" });
    expect(normaliseTag(" internal")).toMatchObject({ ok: true, value: "internal" });
    expect(normaliseTag(5)).toEqual({ ok: false, reason: "not_a_string" });
  });
});

describe("normaliseTraitKey and normaliseTraitValue", () => {
  it("keeps the key's case and refuses reserved prefixes, dots and control characters", () => {
    expect(normaliseTraitKey("Level")).toEqual({ ok: true, value: "Level" });
    expect(normaliseTraitKey("_key")).toEqual({ ok: false, reason: "reserved_prefix" });
    expect(normaliseTraitKey("$gt")).toEqual({ ok: false, reason: "reserved_prefix" });
    expect(normaliseTraitKey("a.b")).toEqual({ ok: false, reason: "invalid_characters" });
    expect(normaliseTraitKey("a\nb")).toEqual({ ok: false, reason: "invalid_characters" });
    expect(normaliseTraitKey("")).toEqual({ ok: false, reason: "empty" });
    expect(normaliseTraitKey("k".repeat(65))).toEqual({ ok: false, reason: "too_long" });
  });

  it("keeps strings up to 1024 characters, finite numbers and booleans exactly", () => {
    expect(normaliseTraitValue(" A b ")).toEqual({ ok: true, value: " A b " });
    expect(normaliseTraitValue("x".repeat(1024))).toMatchObject({ ok: true });
    expect(normaliseTraitValue("x".repeat(1025))).toEqual({ ok: false, reason: "value_too_long" });
    expect(normaliseTraitValue(-1.5)).toEqual({ ok: true, value: -1.5 });
    expect(normaliseTraitValue(false)).toEqual({ ok: true, value: false });
    expect(normaliseTraitValue(Infinity)).toEqual({ ok: false, reason: "not_finite" });
    for (const raw of [null, { $gt: "" }, [1], undefined])
      expect(normaliseTraitValue(raw)).toEqual({ ok: false, reason: "invalid_value" });
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

describe("normaliseEntry and applyOperations", () => {
  it("applies tags, tags_add, tags_remove, traits, traits_once, traits_increment, traits_unset in that order", () => {
    const ops = normaliseEntry(
      entry({
        tags: ["A", "b"],
        tagsAdd: ["C", "a"],
        tagsRemove: ["B"],
        traits: { n: 1, s: "x" },
        traitsOnce: { n: 50, once: true },
        traitsIncrement: { n: 2, s: 1 },
        traitsUnset: ["once"],
      }),
    );
    const { state: next, dropped } = applyOperations(state(["old"], { keep: 1 }), ops);
    expect(next.tags).toEqual(["a", "c"]);
    expect(Object.fromEntries(next.traits)).toEqual({ keep: 1, n: 3, s: "x" });
    expect(dropped).toEqual([{ field: "traits_increment", item: "s", reason: "not_a_number" }]);
  });

  it("keeps the tag list when tags is absent and clears it when it is empty", () => {
    expect(applyOperations(state(["x"]), normaliseEntry(entry({}))).state.tags).toEqual(["x"]);
    expect(applyOperations(state(["x"]), normaliseEntry(entry({ tags: [] }))).state.tags).toEqual([]);
  });

  it("lists dropped items and remembers each tag's first raw form", () => {
    const ops = normaliseEntry(
      entry({ tags: [7, "Team A"], tagsAdd: ["team a", "no!"], traits: { _x: 1 }, traitsIncrement: { k: NaN } }),
    );
    expect(ops.labels.get("team_a")).toBe("Team A");
    expect(ops.dropped).toEqual([
      { field: "tags", item: "7", reason: "not_a_string" },
      { field: "tags_add", item: "no!", reason: "invalid_characters" },
      { field: "traits", item: "_x", reason: "reserved_prefix" },
      { field: "traits_increment", item: "k", reason: "not_finite" },
    ]);
  });

  it("names the player limit a result breaks", () => {
    const tags = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`);
    expect(playerLimitBroken(state(tags(50)))).toBeNull();
    expect(playerLimitBroken(state(tags(51)))).toBe("player_tag_limit");
    expect(playerLimitBroken(state([], Object.fromEntries(tags(51).map((t) => [t, 1]))))).toBe("player_trait_limit");
  });
});

describe("foldDevice and tagCountDeltas", () => {
  it("unions tags and adds missing traits within the limits, keeping the real player's own data", () => {
    const folded = foldDevice(state(["a", "b"], { level: 2 }), state(["b", "c"], { level: 9, guest: true }));
    expect(folded.tags).toEqual(["a", "b", "c"]);
    expect(Object.fromEntries(folded.traits)).toEqual({ level: 2, guest: true });
    const full = Array.from({ length: 50 }, (_, i) => `t${i}`);
    expect(foldDevice(state(full), state(["extra"])).tags).toEqual(full);
  });

  it("counts a tag once after a fold and leaves unchanged tags out", () => {
    const deltas = tagCountDeltas(
      [
        ["a", "b"],
        ["b", "c", "d"],
      ],
      ["a", "b", "c", "e"],
    );
    expect(Object.fromEntries(deltas)).toEqual({ b: -1, d: -1, e: 1 });
  });
});

describe("KeyedLock", () => {
  it("runs holders of one key one at a time, in arrival order, and different keys in parallel", async () => {
    const lock = new KeyedLock();
    const log: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = lock.run(["k"], async () => {
      log.push("first start");
      await gate;
      log.push("first end");
    });
    const second = lock.run(["k"], async () => void log.push("second"));
    await lock.run(["other"], async () => void log.push("other"));
    expect(log).toEqual(["first start", "other"]);
    release();
    await Promise.all([first, second]);
    expect(log).toEqual(["first start", "other", "first end", "second"]);
  });

  it("releases the key when the holder throws", async () => {
    const lock = new KeyedLock();
    await expect(lock.run(["k"], async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    await expect(lock.run(["k", "j"], async () => "ok")).resolves.toBe("ok");
  });
});

describe("entryChains", () => {
  it("keeps entries sharing an identity in one chain, in request order", () => {
    expect(entryChains([["u:a"], ["d:x"], ["u:b", "d:x"], ["u:a"], ["u:c"], ["u:b"]])).toEqual([
      [0, 3],
      [1, 2, 5],
      [4],
    ]);
    expect(entryChains([["u:a"], ["u:b"], ["u:a", "u:b"]])).toEqual([[0, 1, 2]]);
    expect(entryChains([[], []])).toEqual([[0], [1]]);
  });
});
