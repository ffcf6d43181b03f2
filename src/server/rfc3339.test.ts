import { describe, expect, it } from "vitest";
import { canonicalRfc3339 } from "./rfc3339.js";

describe("RFC 3339 timestamps", () => {
  it("reads each form of one instant as it, in protobuf's own form", () => {
    for (const text of [
      "2024-02-29T10:00:00Z",
      "2024-02-29t10:00:00z",
      "2024-02-29T10:00:00.000Z",
      "2024-02-29T11:30:00+01:30",
      "2024-02-29T00:01:00-09:59",
      "2024-02-28T10:01:00-23:59",
      "2024-02-29T10:00:00-00:00",
    ]) {
      expect(canonicalRfc3339(text), text).toBe("2024-02-29T10:00:00Z");
    }
    expect(canonicalRfc3339("2026-11-22T10:00:00.5Z")).toBe("2026-11-22T10:00:00.500Z");
    // Digits past nanoseconds are cut, not rounded.
    expect(canonicalRfc3339("2026-11-22T10:00:00.1234567899z")).toBe("2026-11-22T10:00:00.123456789Z");
    expect(canonicalRfc3339("0001-01-01T00:00:00Z")).toBe("0001-01-01T00:00:00Z");
    expect(canonicalRfc3339("9999-12-31T23:59:59.999999999Z")).toBe("9999-12-31T23:59:59.999999999Z");
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
      expect(canonicalRfc3339(text), text).toBeUndefined();
    }
  });
});
