import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../../support/service/service.js";
import { byName, eventTimes, waitFor } from "../../support/service/events.js";

// An event's timestamp is RFC 3339 exactly (src/server/calls/rfc3339.ts), on /v1 and on Connect JSON alike.
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

const NOT_RFC_3339 = 'timestamp: not an RFC 3339 timestamp (e.g. "2026-11-22T10:00:00Z")';

/** The instant of `iso` (UTC, with a Z) written at an offset of `minutes` east of UTC. */
function atOffset(iso: string, minutes: number): string {
  const local = new Date(Date.parse(iso) + minutes * 60_000).toISOString().slice(0, -1);
  const size = Math.abs(minutes);
  const hhmm = `${String(Math.floor(size / 60)).padStart(2, "0")}:${String(size % 60).padStart(2, "0")}`;
  return `${local}${minutes < 0 ? "-" : "+"}${hhmm}`;
}

type Send = (key: string, body: object) => Promise<{ status: number; body: any }>;
const protocols: [string, Send][] = [
  ["/v1", (key, body) => svc.postJson("/v1/events", body, key)],
  [
    "Connect JSON",
    async (key, body) => {
      const res = await fetch(`${svc.baseUrl}/platformapi.v1.EventService/Ingest`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": key },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    },
  ],
];

describe.each(protocols)("an event's timestamp over %s", (_, send) => {
  it("takes t and z in either case and any offset, each counted on its UTC day", async () => {
    const { publicKey, privateKey } = await svc.createProject();
    const [older, newer] = eventTimes(svc, 2);
    // The widest offsets write each instant on another calendar day than its UTC one.
    const forms: [string, (iso: string) => string][] = [
      ["lower", (iso) => iso.replace("T", "t").replace("Z", "z")],
      ["east", (iso) => atOffset(iso, 23 * 60 + 59)],
      ["west", (iso) => atOffset(iso, -(23 * 60 + 59)).replace("T", "t")],
    ];
    const events = [older, newer].flatMap(({ timestamp }) =>
      forms.map(([name, form]) => ({ name, device_id: "d", timestamp: form(timestamp) })),
    );
    const res = await send(publicKey, { events });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ accepted: events.length, rejected: [] });

    const range = { from: older.day, to: newer.day, names: forms.map(([name]) => name) };
    const read = async () => byName((await svc.postJson("/v1/events/trends", range, privateKey)).body);
    const counted = (series: Map<string, unknown[]>) =>
      [...series.values()].flat().reduce((sum: number, point: any) => sum + point.events, 0);
    const series = await waitFor(read, (s) => counted(s) === events.length);
    for (const [name] of forms) {
      expect(series.get(name), name).toEqual([
        { date: older.day, events: 1, players: 1, sum: null },
        { date: newer.day, events: 1, players: 1, sum: null },
      ]);
    }
  });

  it("rejects a date that is not on the calendar, a time past the day's end or a bad offset as bad_timestamp", async () => {
    const { publicKey } = await svc.createProject();
    const [{ day }] = eventTimes(svc, 1);
    const year = day.slice(0, 4);
    const unreadable = [
      `${year}-02-30T00:00:00Z`,
      `${day}T24:00:00Z`,
      `${year}-13-01T00:00:00Z`,
      `${day}T00:00:61Z`,
      `${day}T23:59:60Z`,
      `${day}T12:00:00+24:00`,
    ];
    const events = [
      { name: "ok", device_id: "d" },
      ...unreadable.map((timestamp) => ({ name: "x", device_id: "d", timestamp })),
    ];
    const res = await send(publicKey, { events });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.accepted).toBe(1);
    expect(res.body.rejected).toEqual(
      unreadable.map((_, i) => ({ index: i + 1, code: "bad_timestamp", message: NOT_RFC_3339 })),
    );
  });
});
