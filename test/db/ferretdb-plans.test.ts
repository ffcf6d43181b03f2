import { describe, expect, it } from "vitest";
import { engineOf } from "../../src/db/engine.js";
import { projectIdRange } from "../../src/db/ids.js";
import { PLAYER_PROFILES, ProfileStore } from "../../src/players/storage/profile-store.js";
import { scratchDatabase } from "../support/db/scratch-database.js";

// FerretDB's SQLite query plans (the embedded engine only): what its filters cost.
const database = scratchDatabase("pushdown", (database) =>
  database.db.collection("docs").insertMany([{ _id: "prjA/u:a" }, { _id: "prjB/u:a" }] as never[]),
);

const plan = async (filter: object) => {
  const explained = await database().db.command({ explain: { find: "docs", filter } });
  return (explained.queryPlanner.Plan as string[]).join("; ");
};

describe("the embedded engine's query plans", () => {
  it("read a project's documents by the range of their _id from the index; a filter on project_id scans", async () => {
    expect(await plan({ _id: projectIdRange("prjA") })).toMatch(/SEARCH .* USING INDEX/);
    expect(await plan({ _id: "prjA/u:a" })).toMatch(/SEARCH .* USING INDEX/);
    expect(await plan({ project_id: "prjA" })).toMatch(/^[^;]*SCAN/);
  });
});

describe("indexes on the embedded engine", () => {
  it("are none on the profiles but _id's (a query never uses one)", async () => {
    const profiles = database().db.collection<{ _id: string }>(PLAYER_PROFILES);
    await profiles.insertOne({ _id: "prjA/u:a" });
    await new ProfileStore(database().db, engineOf(database(), 0)).createIndexes();
    expect((await profiles.listIndexes().toArray()).map((index) => index.name)).toEqual(["_id_"]);
  });
});
