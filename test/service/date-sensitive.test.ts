import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// .ci/run runs the suites of test/date-sensitive.txt again under shifted clocks (docs/testing.md).
const TEST = new URL("../", import.meta.url);
const listed = readFileSync(new URL("date-sensitive.txt", TEST), "utf8").split("\n").filter(Boolean);
const suites = readdirSync(TEST, { recursive: true, encoding: "utf8" })
  .filter((name) => name.endsWith(".test.ts"))
  .map((name) => `test/${name}`);

describe("the date-sensitive suites", () => {
  it("lists every suite that sends events or reads daily series, and only suites that exist", () => {
    const sendingOrCharting = suites.filter((path) =>
      /\/v1\/events|eventTimes\(/.test(readFileSync(new URL(path.slice("test/".length), TEST), "utf8")),
    );
    expect(listed.filter((path) => !suites.includes(path))).toEqual([]);
    expect(sendingOrCharting.filter((path) => !listed.includes(path))).toEqual([]);
  });
});
