import { describe, expect, it } from "vitest";
import { countDeltas, membershipChanges } from "./membership.js";

describe("membershipChanges", () => {
  it("lists per tag who gained and who lost it, and the count moves by the difference", () => {
    const changes = membershipChanges([
      { identityKey: "u:a", before: ["x", "y"], after: ["y", "z"] },
      { identityKey: "d:b", before: ["x"], after: [] },
      { identityKey: "u:c", before: [], after: ["z"] },
    ]);
    expect(changes).toEqual([
      { tag: "z", added: ["u:a", "u:c"], removed: [] },
      { tag: "x", added: [], removed: ["u:a", "d:b"] },
    ]);
    expect(countDeltas(changes)).toEqual(
      new Map([
        ["z", 2],
        ["x", -2],
      ]),
    );
  });
});
