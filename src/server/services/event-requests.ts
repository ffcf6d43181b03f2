import type { JsonObject } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Event } from "../../../gen/platformapi/v1/events_pb.js";
import { InvalidArgumentError } from "../../errors.js";
import { MAX_EVENTS_PER_CALL, type IncomingEvent } from "../../events/queue/entries.js";
import { eventNames, eventQuery, type EventQuery, type EventQueryInput } from "../../events/reads/query.js";
import type { RetentionRequest, SplitBy } from "../../events/events.js";
import type { Interval } from "../../events/kpis/periods.js";
import type { RetentionRequest as RetentionRequestMessage } from "../../../gen/platformapi/v1/kpis_pb.js";
import { withProtoKey } from "./proto-keys.js";

/** Validation of EventService requests: proto messages in, domain values out, invalid_argument naming the field. */

const invalid = (message: string) => new InvalidArgumentError(message);

/**
 * The events of an ingest call. A call over the limit, or properties that are
 * not a flat object of strings, numbers and booleans with unreserved keys, is
 * malformed and fails whole; anything else is decided event by event.
 */
export function incomingEvents(events: readonly Event[], unreadableTimestamps: ReadonlySet<string>): IncomingEvent[] {
  if (events.length > MAX_EVENTS_PER_CALL) {
    throw invalid(`events: at most ${MAX_EVENTS_PER_CALL} a call, got ${events.length}`);
  }
  return events.map((event, i) => ({
    name: event.name,
    partnerUserId: event.partnerUserId,
    deviceId: event.deviceId,
    // A timestamp the JSON gave but could not read is an invalid date, which the domain rejects as bad_timestamp.
    timestamp: unreadableTimestamps.has(`events[${i}].timestamp`)
      ? new Date(Number.NaN)
      : event.timestamp && timestampDate(event.timestamp),
    eventId: event.eventId,
    properties: event.properties && flatProperties(`events[${i}].properties`, event.properties),
  }));
}

function flatProperties(field: string, properties: JsonObject): Record<string, string | number | boolean> {
  const flat: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(properties)) {
    if (key === "" || key.startsWith("$")) throw invalid(`${field}: key ${JSON.stringify(key)} is reserved or empty`);
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
      throw invalid(`${field}.${key}: a property is a string, number or boolean (flat, no objects, lists or null)`);
    }
    flat[key] = value;
  }
  return flat;
}

/** The date range and cohort filters of every read with a range: the one shared reading (src/events/reads/query.ts). */
export function readQuery(
  req: Omit<EventQueryInput, "traits"> & { traits?: JsonObject },
  protoKeys: ReadonlySet<string>,
): EventQuery {
  return eventQuery({ ...req, traits: req.traits && withProtoKey(req.traits, "traits", protoKeys, null) });
}

export function trendsOptions(req: { interval?: string; splitBy?: string; names: string[]; sum: string }): {
  names: string[];
  splitBy?: SplitBy;
  interval: Interval;
  sum?: string;
} {
  // interval and split_by hold allowed values only: their buf.validate rules refused the rest.
  return {
    names: eventNames(req.names),
    splitBy: req.splitBy as SplitBy | undefined,
    interval: (req.interval ?? "day") as Interval,
    ...(req.sum && { sum: req.sum }),
  };
}

/** What a Retention request asks beyond its query; interval and mode hold allowed values (buf.validate). */
export function retentionOptions(req: RetentionRequestMessage): Omit<RetentionRequest, "query"> {
  return {
    interval: req.interval === "week" ? "week" : "day",
    periods: req.periods,
    startName: req.startName,
    returnName: req.returnName,
    mode: req.mode === "unbounded" ? "unbounded" : "n_day",
    splitBy: req.splitBy as SplitBy | undefined,
  };
}
