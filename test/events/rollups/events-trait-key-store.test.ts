import { describe, expect, it } from "vitest";
import { EventTraitKeyStore } from "../../../src/events/rollups/event-trait-key-store.js";
import { scratchDatabase } from "../../support/db/scratch-database.js";

const database = scratchDatabase("trait_keys");

describe("the apply worker's materialised trait keys", () => {
  it("are read once and kept with what it adds, until its lease lapsed: then another worker's are read", async () => {
    const mine = new EventTraitKeyStore(database().db);
    const other = new EventTraitKeyStore(database().db);
    await mine.addMaterialised("prj", "tier");
    expect(await mine.materialisedKeys("prj")).toEqual(new Set(["tier"]));
    await mine.addMaterialised("prj", "region");
    // Another instance's worker, while this one's lease had run out.
    await other.addMaterialised("prj", "class");
    expect(await mine.materialisedKeys("prj")).toEqual(new Set(["tier", "region"]));
    mine.leaseLapsed();
    expect(await mine.materialisedKeys("prj")).toEqual(new Set(["tier", "region", "class"]));
  });
});
