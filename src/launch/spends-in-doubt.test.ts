import { describe, expect, it } from "vitest";
import { SpendsInDoubt } from "./spends-in-doubt.js";

const later = new Date(Date.now() + 60_000);

describe("SpendsInDoubt", () => {
  it("lets exactly one caller claim a doubtful spend", () => {
    const doubts = new SpendsInDoubt(true);
    doubts.remember("a", later);
    expect([doubts.claim("a"), doubts.claim("a")]).toEqual([true, false]);
  });

  it("claims nothing once a spend of the token succeeded", () => {
    const doubts = new SpendsInDoubt(true);
    doubts.remember("a", later);
    doubts.forget("a");
    expect(doubts.claim("a")).toBe(false);
  });

  it("claims nothing where other processes spend too", () => {
    const doubts = new SpendsInDoubt(false);
    doubts.remember("a", later);
    expect(doubts.claim("a")).toBe(false);
  });

  it("prunes the doubts of expired tokens", () => {
    const doubts = new SpendsInDoubt(true);
    doubts.remember("old", new Date(0));
    doubts.remember("new", later);
    doubts.prune(new Date());
    expect([doubts.claim("old"), doubts.claim("new")]).toEqual([false, true]);
  });
});
