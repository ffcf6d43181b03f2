import { create, toJson } from "@bufbuild/protobuf";
import { TimestampSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import { parseDay } from "../../events/rollup-keys.js";

/**
 * RFC 3339's date-time, exactly: a real calendar date, `T` and `Z` in either case, an offset of `±hh:mm`.
 * protobuf-es's JSON reader takes what `Date.parse` takes (`2026-02-30`, `T24:00:00`) and refuses a lowercase `t`.
 */
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/** What a google.protobuf.Timestamp can hold: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z. */
const MIN_SECONDS = -62_135_596_800;
const MAX_SECONDS = 253_402_300_799;

/**
 * The instant an RFC 3339 date-time names, or undefined for one that is not (or that a Timestamp cannot hold).
 * Second 60 is refused: a Timestamp has no leap seconds. Digits past nanoseconds are cut.
 */
function parseRfc3339(text: string): Timestamp | undefined {
  const match = DATE_TIME.exec(text);
  if (match === null) return undefined;
  const [, date, hour, minute, second, fraction = "", sign, offsetHour, offsetMinute] = match;
  const day = parseDay(date);
  if (day === null || Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return undefined;
  if (sign !== undefined && (Number(offsetHour) > 23 || Number(offsetMinute) > 59)) return undefined;
  const offset =
    sign === undefined ? 0 : (sign === "-" ? -1 : 1) * (Number(offsetHour) * 3600 + Number(offsetMinute) * 60);
  const seconds = day.getTime() / 1000 + Number(hour) * 3600 + Number(minute) * 60 + Number(second) - offset;
  if (seconds < MIN_SECONDS || seconds > MAX_SECONDS) return undefined;
  return create(TimestampSchema, { seconds: BigInt(seconds), nanos: Number(fraction.slice(0, 9).padEnd(9, "0")) });
}

/**
 * `text` in a form protobuf-es's JSON reader takes as the same instant, or undefined as above: itself when it has
 * `T`, `Z` and at most nine fraction digits (so most bodies need no copy), else protobuf's own form (UTC, `Z`).
 */
export function readableRfc3339(text: string): string | undefined {
  const timestamp = parseRfc3339(text);
  if (timestamp === undefined) return undefined;
  return /[tz]|\.\d{10}/.test(text) ? (toJson(TimestampSchema, timestamp) as string) : text;
}
