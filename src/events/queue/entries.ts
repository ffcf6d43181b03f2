import { fail, ok, type Rejection, type Result } from "../../errors.js";

/** One event as the caller sent it, before validation. */
export interface IncomingEvent {
  name: string;
  partnerUserId?: string;
  deviceId?: string;
  /** Absent: the time the service accepts it. */
  timestamp?: Date;
  eventId?: string;
  /** Already checked flat (string, number, boolean values; no reserved keys) by the request layer. */
  properties?: Readonly<Record<string, string | number | boolean>>;
}

/** An accepted event in the shape the queue stores. Field names are short: a segment holds up to 1,000. */
export interface QueuedEvent {
  /** Name. */
  n: string;
  /** Partner user id, or null for a device-only event. */
  u: string | null;
  /** Device id, or null. */
  d: string | null;
  /** When it happened. */
  t: Date;
  /** event_id, or null. */
  i: string | null;
  /** Properties as JSON text: no user key ever becomes a stored field name. */
  p: string | null;
}

export type EventRejectCode =
  | "missing_identity"
  | "bad_identity"
  | "bad_name"
  | "bad_timestamp"
  | "bad_event_id"
  | "properties_too_large"
  | "name_limit";

export const MAX_EVENTS_PER_CALL = 1000;
export const MAX_NAME_CHARS = 64;
export const MAX_EVENT_ID_CHARS = 128;
export const MAX_IDENTITY_CHARS = 256;
export const MAX_PROPERTIES = 50;
export const MAX_PROPERTIES_BYTES = 8 * 1024;
/** How far ahead of the server's clock a timestamp may be. */
export const MAX_FUTURE_MS = 5 * 60 * 1000;

const NAME = /^[A-Za-z0-9_\-.:]+$/;

const reject = (code: EventRejectCode, message: string): Result<never, Rejection<EventRejectCode>> =>
  fail({ code, message });

/**
 * Decides one event: accepted (in its queued shape) or rejected with a code.
 * `oldest` is the start of the retention window: older events would be deleted at once.
 */
export function checkEvent(
  event: IncomingEvent,
  now: Date,
  oldest: Date,
): Result<QueuedEvent, Rejection<EventRejectCode>> {
  const partner = event.partnerUserId || undefined;
  const device = event.deviceId || undefined;
  if (partner === undefined && device === undefined) {
    return reject("missing_identity", "an event needs partner_user_id or device_id");
  }
  if ((partner?.length ?? 0) > MAX_IDENTITY_CHARS || (device?.length ?? 0) > MAX_IDENTITY_CHARS) {
    return reject("bad_identity", `partner_user_id and device_id: at most ${MAX_IDENTITY_CHARS} characters`);
  }
  if (event.name.length > MAX_NAME_CHARS || !NAME.test(event.name)) {
    return reject("bad_name", `name: 1 to ${MAX_NAME_CHARS} characters of letters, digits, _ - . :`);
  }
  const t = event.timestamp ?? now;
  if (Number.isNaN(t.getTime())) {
    return reject("bad_timestamp", 'timestamp: not an RFC 3339 timestamp (e.g. "2026-11-22T10:00:00Z")');
  }
  if (t.getTime() > now.getTime() + MAX_FUTURE_MS) {
    return reject("bad_timestamp", "timestamp: more than 5 minutes ahead of the server's time");
  }
  if (t.getTime() < oldest.getTime()) {
    return reject("bad_timestamp", "timestamp: older than the retention window");
  }
  if (event.eventId !== undefined && (event.eventId === "" || event.eventId.length > MAX_EVENT_ID_CHARS)) {
    return reject("bad_event_id", `event_id: 1 to ${MAX_EVENT_ID_CHARS} characters`);
  }
  let p: string | null = null;
  if (event.properties !== undefined && Object.keys(event.properties).length > 0) {
    if (Object.keys(event.properties).length > MAX_PROPERTIES) {
      return reject("properties_too_large", `properties: at most ${MAX_PROPERTIES} values`);
    }
    p = JSON.stringify(event.properties);
    if (Buffer.byteLength(p) > MAX_PROPERTIES_BYTES) {
      return reject("properties_too_large", `properties: at most ${MAX_PROPERTIES_BYTES} bytes of JSON`);
    }
  }
  return ok({ n: event.name, u: partner ?? null, d: device ?? null, t, i: event.eventId ?? null, p });
}
