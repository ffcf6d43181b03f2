import { describe, expect, it } from "vitest";
import { bucketsOf, bucketStart, dayNumber, dayOfNumber, mondayOf, weekOf } from "./periods.js";

describe("periods of the KPIs", () => {
  it("ISO weeks start on Monday, across a year's end", () => {
    const monday = (day: string) => dayOfNumber(mondayOf(weekOf(dayNumber(day))));
    expect(monday("2026-12-31")).toBe("2026-12-28");
    expect(monday("2027-01-03")).toBe("2026-12-28");
    expect(monday("2027-01-04")).toBe("2027-01-04");
    expect(monday("1970-01-01")).toBe("1969-12-29");
    expect(monday("2024-02-29")).toBe("2024-02-26");
  });

  it("a bucket's date is its first day, clipped to the range's first", () => {
    expect(bucketStart("2026-11-18", "month")).toBe("2026-11-01");
    const { dates, dateOf } = bucketsOf(["2026-11-25", "2026-11-30", "2026-12-01"], "week");
    expect(dates).toEqual(["2026-11-25", "2026-11-30"]);
    expect(dateOf.get("2026-12-01")).toBe("2026-11-30");
    expect(bucketsOf(["2026-11-30", "2026-12-01"], "month").dates).toEqual(["2026-11-30", "2026-12-01"]);
  });
});
