import { fromJson } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { readableRfc3339 } from "./rfc3339.js";

/** The instant protobuf-es's JSON reader makes of what readableRfc3339 answers. */
function instant(text: string): { seconds: bigint; nanos: number } {
  const readable = readableRfc3339(text);
  expect(readable, text).toBeDefined();
  const { seconds, nanos } = fromJson(TimestampSchema, readable!);
  return { seconds, nanos };
}

describe("RFC 3339 timestamps", () => {
  it("reads each form of one instant as it, in a form protobuf-es reads", () => {
    const tenOClock = { seconds: BigInt(Date.parse("2024-02-29T10:00:00Z") / 1000), nanos: 0 };
    for (const text of [
      "2024-02-29T10:00:00Z",
      "2024-02-29t10:00:00z",
      "2024-02-29T10:00:00.000Z",
      "2024-02-29T11:30:00+01:30",
      "2024-02-29t11:30:00+01:30",
      "2024-02-29T00:01:00-09:59",
      "2024-02-28T10:01:00-23:59",
      "2024-02-29T10:00:00-00:00",
    ]) {
      expect(instant(text), text).toEqual(tenOClock);
    }
    // Protobuf's own form is kept as it is: the body needs no copy.
    expect(readableRfc3339("2024-02-29T11:30:00.123+01:30")).toBe("2024-02-29T11:30:00.123+01:30");
    expect(readableRfc3339("2024-02-29t11:30:00.5+01:30")).toBe("2024-02-29T10:00:00.500Z");
    // Digits past nanoseconds are cut, not rounded.
    expect(readableRfc3339("2026-11-22T10:00:00.1234567899Z")).toBe("2026-11-22T10:00:00.123456789Z");
    expect(instant("0001-01-01T00:00:00Z")).toEqual({ seconds: -62_135_596_800n, nanos: 0 });
    expect(instant("9999-12-31T23:59:59.999999999Z")).toEqual({ seconds: 253_402_300_799n, nanos: 999_999_999 });
  });

  it("refuses dates that are not on the calendar, times past the day's end, bad offsets and what is no date-time", () => {
    for (const text of [
      "2026-02-30T00:00:00Z",
      "2025-02-29T00:00:00Z",
      "2026-04-31T00:00:00Z",
      "2026-13-01T00:00:00Z",
      "2026-00-10T00:00:00Z",
      "2026-01-00T00:00:00Z",
      "2026-01-01T24:00:00Z",
      "2026-01-01T23:60:00Z",
      "2026-01-01T00:00:61Z",
      // A Timestamp has no leap seconds.
      "2026-12-31T23:59:60Z",
      "2026-01-01T00:00:00+24:00",
      "2026-01-01T00:00:00+01:60",
      "2026-01-01T00:00:00+0100",
      "2026-01-01T00:00:00",
      "2026-01-01 00:00:00Z",
      "2026-01-01T00:00Z",
      "2026-01-01T00:00:00.Z",
      "2026-1-01T00:00:00Z",
      "2026-01-01",
      "yesterday",
      "",
      // Outside what a Timestamp holds.
      "0000-12-31T23:59:59Z",
      "0001-01-01T00:00:00+00:01",
      "9999-12-31T23:59:59-00:01",
    ]) {
      expect(readableRfc3339(text), text).toBeUndefined();
    }
  });
});
