import { describe, expect, it } from "vitest";
import { OwnerMemory } from "../../db/owner-memory.js";
import { MembershipMemory } from "./membership-memory.js";

/** A bucket of one page. */
const bucket = (members: string[]) => ({ pages: [{ low: "", members }] });

describe("MembershipMemory", () => {
  it("keeps a bucket read, replaces it with each acknowledged write, and forgets it after a failed one", () => {
    const memory = new MembershipMemory(new OwnerMemory(1_000_000));
    memory.read(memory.epoch("p1"), "p1/vip/0", bucket(["u:a"]));
    expect(memory.get("p1/vip/0")).toMatchObject(bucket(["u:a"]));
    memory.written("p1/vip/0", bucket(["u:a", "u:b"]));
    expect(memory.get("p1/vip/0")).toMatchObject(bucket(["u:a", "u:b"]));
    memory.forget(["p1/vip/0"]);
    expect(memory.get("p1/vip/0")).toBeUndefined();
  });

  it("does not keep a read that began before a write", () => {
    const memory = new MembershipMemory(new OwnerMemory(1_000_000));
    const epoch = memory.epoch("p1");
    memory.written("p1/vip/1", bucket(["u:c"]));
    memory.read(epoch, "p1/vip/0", bucket([]));
    expect(memory.get("p1/vip/0")).toBeUndefined();
  });

  it("keeps nothing past its budget, and gives back what it forgets", () => {
    const budget = new OwnerMemory(300);
    const memory = new MembershipMemory(budget);
    memory.read(memory.epoch("p1"), "p1/vip/0", bucket(["u:a"]));
    memory.read(memory.epoch("p1"), "p1/vip/1", bucket(["u:b"]));
    expect(memory.get("p1/vip/1")).toBeUndefined();
    memory.forgetAll();
    expect(budget.usedBytes).toBe(0);
  });

  it("keeps a change made before it is written: a bucket it holds whatever the budget, a new one only if it fits", () => {
    const budget = new OwnerMemory(300);
    const memory = new MembershipMemory(budget);
    expect(memory.change("p1/vip/0", bucket(["u:a"]))).toBe(true);
    // Grown past the budget: it must stay until it is written.
    expect(memory.change("p1/vip/0", bucket(["u:a", "u:b", "u:c"]))).toBe(true);
    expect(memory.get("p1/vip/0")).toMatchObject(bucket(["u:a", "u:b", "u:c"]));
    expect(budget.usedBytes).toBeGreaterThan(300);
    expect(memory.change("p1/vip/1", bucket(["u:d"]))).toBe(false);
    expect(memory.get("p1/vip/1")).toBeUndefined();
  });

  it("holds a project whole once read whole and undisturbed: an absent bucket is empty, not unknown", () => {
    const memory = new MembershipMemory(new OwnerMemory(1_000_000));
    const stats = { counts: new Map([[1, 1]]), seen: new Map() };
    const disturbed = memory.epoch("p1");
    memory.change("p1/vip/1", bucket(["u:b"]));
    expect(memory.readProject(disturbed, "p1", new Map([["p1/vip/0", bucket(["u:a"])]]), stats)).toBe(false);
    expect(memory.get("p1/gold/0")).toBeUndefined();

    const read = memory.readProject(memory.epoch("p1"), "p1", new Map([["p1/vip/0", bucket(["u:a"])]]), stats);
    expect(read).toBe(true);
    expect(memory.get("p1/gold/0")).toMatchObject(bucket([]));
    expect(memory.get("p1/vip/1")).toMatchObject(bucket(["u:b"]));
    expect(memory.get("p2/gold/0")).toBeUndefined();
    // A write through that fails may have changed the bucket: the project is no longer whole.
    memory.forget(["p1/vip/0"]);
    expect(memory.get("p1/gold/0")).toBeUndefined();
  });
});
