import { describe, expect, it } from "vitest";
import {
  applyOperations,
  foldDevice,
  normaliseEntry,
  playerLimitBroken,
  type EntryInput,
  type PlayerState,
} from "./operations.js";

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

describe("foldDevice", () => {
  it("unions tags and adds missing traits within the limits, keeping the real player's own data", () => {
    const folded = foldDevice(state(["a", "b"], { level: 2 }), state(["b", "c"], { level: 9, guest: true }));
    expect(folded.tags).toEqual(["a", "b", "c"]);
    expect(Object.fromEntries(folded.traits)).toEqual({ level: 2, guest: true });
    const full = Array.from({ length: 50 }, (_, i) => `t${i}`);
    expect(foldDevice(state(full), state(["extra"])).tags).toEqual(full);
  });
});
