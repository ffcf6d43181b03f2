import { describe, expect, it } from "vitest";
import { OwnerMemory } from "../../db/owner-memory.js";
import type { TraitValue } from "../rules/normalise.js";
import { ProfileMemory, TraitHolderIndex } from "./profile-memory.js";
import type { ProfileSlot } from "../rules/profile.js";

const PROJECT = "0123456789abcdef01234567";

function slot(identityKey: string, traits: Record<string, TraitValue>, version = 1): ProfileSlot {
  const at = new Date("2026-01-10T08:00:00Z");
  const profile = {
    projectId: PROJECT,
    identityKey,
    partnerUserId: identityKey.slice(2),
    deviceId: null,
    platformUserId: null,
    tags: [],
    traits: new Map(Object.entries(traits)),
    version,
    firstSeenAt: at,
    lastSeenAt: at,
  };
  return { profile, version, foldedInto: null };
}

const slots = (entries: [string, Record<string, TraitValue>][]) =>
  new Map(entries.map(([key, traits]) => [key, slot(key, traits)]));

describe("the holders of a trait value", () => {
  it("are listed from the profiles the first time, by value and type", () => {
    const index = new TraitHolderIndex();
    const all = slots([
      ["u:a", { region: "eu", level: 3 }],
      ["u:b", { region: "na", level: "3" }],
      ["u:c", { region: "eu" }],
    ]);
    expect([...index.of("region", "eu", all)]).toEqual(["u:a", "u:c"]);
    expect([...index.of("level", 3, all)]).toEqual(["u:a"]);
    expect(index.bytes).toBe(3 * 40);
  });

  it("follow every write: a value gained, changed, or a profile folded away", () => {
    const index = new TraitHolderIndex();
    const all = slots([["u:a", { region: "eu" }]]);
    const eu = index.of("region", "eu", all);
    index.written("u:b", slot("u:b", { region: "eu" }));
    index.written("u:a", slot("u:a", { region: "na" }, 2));
    expect([...eu]).toEqual(["u:b"]);
    index.written("u:b", { profile: null, version: 2, foldedInto: "u:c" });
    expect([...eu]).toEqual([]);
    expect(index.bytes).toBe(0);
  });

  it("are kept for the 16 values searched last", () => {
    const index = new TraitHolderIndex();
    const all = slots([["u:a", { level: 1 }]]);
    const first = index.of("level", 1, all);
    for (let value = 2; value <= 17; value++) index.of("level", value, all);
    index.written("u:a", slot("u:a", { level: 2 }, 2));
    // Dropped: no longer kept by writes, and listed again when searched.
    expect([...first]).toEqual(["u:a"]);
    expect([...index.of("level", 1, all)]).toEqual(["u:a"]);
  });
});

describe("the owner's memory of profiles, with trait holders", () => {
  const filled = async (budget: OwnerMemory) => {
    const memory = new ProfileMemory(budget);
    await memory.fill(PROJECT, async () => slots([["u:a", { region: "eu" }]]));
    return memory;
  };

  it("answers the holders once the project is whole, and keeps them through writes", async () => {
    const memory = await filled(new OwnerMemory(1_000_000));
    expect(memory.traitHolders("another project", [["region", "eu"]])).toBeNull();
    const [eu] = memory.traitHolders(PROJECT, [["region", "eu"]])!;
    memory.written(PROJECT, [["u:b", slot("u:b", { region: "eu" })]]);
    expect([...eu].sort()).toEqual(["u:a", "u:b"]);
  });

  it("counts them in its budget, and drops them past it (the search then looks at each profile)", async () => {
    const budget = new OwnerMemory(1_000_000);
    const memory = await filled(budget);
    const profilesOnly = budget.usedBytes;
    memory.traitHolders(PROJECT, [["region", "eu"]]);
    expect(budget.usedBytes).toBe(profilesOnly + 40);
    const tight = await filled(new OwnerMemory(profilesOnly));
    expect(tight.traitHolders(PROJECT, [["region", "eu"]])).toBeNull();
    memory.forget(PROJECT);
    expect(budget.usedBytes).toBe(0);
  });
});
