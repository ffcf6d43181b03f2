import { describe, expect, it } from "vitest";
import { projectIdRange } from "../../src/db/ids.js";
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

describe("a range of _id on the embedded engine", () => {
  it("read a range of a project's days by the range of their _id from the index", async () => {
    const range = { $gte: "prjA/2026-11-01/", $lt: "prjA/2026-11-300" };
    expect(await plan({ _id: range })).toMatch(/SEARCH .* USING INDEX/);
  });
});
