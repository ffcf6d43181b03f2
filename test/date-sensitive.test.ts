import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// .ci/run runs the suites of test/date-sensitive.txt again under shifted clocks (docs/testing.md).
const listed = readFileSync(new URL("date-sensitive.txt", import.meta.url), "utf8")
  .split("\n")
  .filter(Boolean);
const suites = readdirSync(new URL(".", import.meta.url)).filter((name) => name.endsWith(".test.ts"));

describe("the date-sensitive suites", () => {
  it("lists every suite that sends events or reads daily series, and only suites that exist", () => {
    const sendingOrCharting = suites
      .filter((name) => /\/v1\/events|eventTimes\(/.test(readFileSync(new URL(name, import.meta.url), "utf8")))
      .map((name) => `test/${name}`);
    expect(listed.filter((path) => !suites.includes(path.slice("test/".length)))).toEqual([]);
    expect(sendingOrCharting.filter((path) => !listed.includes(path))).toEqual([]);
  });
});
