import { describe, expect, it } from "vitest";
import { blockSteps, shapeMismatches, shellBlocks } from "./readme-blocks.js";

const markdown = [
  "# Title", // 1
  "", // 2
  "<!-- not run by test/service/readme.test.ts: starts the service -->", // 3
  "```sh", // 4
  "npm start", // 5
  "```", // 6
  "", // 7
  "```ts", // 8
  "const x = 1;", // 9
  "```", // 10
  "", // 11
  "1. A step:", // 12
  "", // 13
  "   ```sh", // 14
  "   A=$(echo 1)   # sets A", // 15
  "   echo '{\"a\": 1}'", // 16
  '   # {"a":', // 17
  "   #  1}", // 18
  "   # a comment in words", // 19
  "   echo done", // 20
  "   ```", // 21
].join("\n");

describe("shellBlocks", () => {
  it("finds shell blocks only, strips list indentation, and reads the not-run mark", () => {
    const blocks = shellBlocks(markdown);
    expect(blocks.map((b) => b.line)).toEqual([4, 14]);
    expect(blocks[0].notRun).toBe("starts the service");
    expect(blocks[1].notRun).toBeUndefined();
    expect(blocks[1].lines[0]).toBe("A=$(echo 1)   # sets A");
  });
});

describe("blockSteps", () => {
  it("ends a step at each JSON comment and keeps comments in words in the script", () => {
    const steps = blockSteps(shellBlocks(markdown)[1]);
    expect(steps).toEqual([
      { line: 15, script: "A=$(echo 1)   # sets A\necho '{\"a\": 1}'", expected: { a: 1 } },
      { line: 19, script: "# a comment in words\necho done", expected: undefined },
    ]);
  });
});

describe("shapeMismatches", () => {
  it("accepts the same keys and values, placeholders and timestamps written the same way", () => {
    const shown = { id: "prj_...", n: 42, ok: true, at: "2026-11-22T10:00:00Z", list: [{ t: "a...z" }] };
    const actual = { id: "prj_Xy12", n: 42, ok: true, at: "2027-01-02T03:04:05Z", list: [{ t: "abcz" }] };
    expect(shapeMismatches(shown, actual)).toEqual([]);
  });

  it("names every difference by its path", () => {
    const shown = { id: "prj_...", n: 42, tags: ["a"], at: "2026-11-22T10:00:00Z", gone: 1, s: "x", name: "A" };
    const actual = { id: "key_1", n: 43, tags: ["a", "b"], at: "2026-11-22T10:00:00.123Z", extra: 1, s: 1, name: "B" };
    expect(shapeMismatches(shown, actual)).toEqual([
      '$.id: shown "prj_...", got "key_1"',
      "$.n: shown 42, got 43",
      '$.tags: shown 1 items, got ["a","b"]',
      '$.at: shown "2026-11-22T10:00:00Z", got "2026-11-22T10:00:00.123Z"',
      "$.gone: shown, but missing from the answer",
      '$.s: shown "x", got 1',
      '$.name: shown "A", got "B"',
      "$.extra: not shown, got 1",
    ]);
  });

  it("tells an object from an array or null", () => {
    expect(shapeMismatches({ a: {} }, { a: [] })).toEqual(["$.a: shown an object, got []"]);
    expect(shapeMismatches({ a: null }, { a: {} })).toEqual(["$.a: shown null, got {}"]);
  });
});
