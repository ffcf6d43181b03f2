import { describe, expect, it } from "vitest";
import { projectIdRange } from "../../src/db/ids.js";
import { scratchDatabase } from "../support/db/scratch-database.js";

const database = scratchDatabase("project_range");

const inside = ["prjA/", "prjA/u:a", 'prjA/u:"q', "prjA/ space", "prjA/\\slash", "prjA/é", "prjA/\u2028", "prjA/~"];
const outside = ["prjA", "prjA0", "prjA0/x", "prjA.x", "prjA-/x", "prjB/u:a", "prj/x", "prjAA/x", "prjA\u0000/x"];

describe("a project's documents by the range of their _id", () => {
  it("are every document whose _id starts with the project and '/', and no other", async () => {
    const docs = database().db.collection<{ _id: string | number }>("docs");
    await docs.insertMany([...inside, ...outside, 7].map((_id) => ({ _id })));
    const found = await docs.find({ _id: projectIdRange("prjA") }).toArray();
    expect(found.map((doc) => doc._id).sort()).toEqual([...inside].sort());
  });
});
