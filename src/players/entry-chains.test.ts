import { describe, expect, it } from "vitest";
import { entryChains } from "./entry-chains.js";

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
