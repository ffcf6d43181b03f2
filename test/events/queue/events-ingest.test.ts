import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyedLock } from "../../../src/db/keyed-lock.js";
import { QueueStore } from "../../../src/events/queue/queue-store.js";
import { SegmentStore } from "../../../src/events/queue/segment-store.js";
import { startTestService, type TestService } from "../../support/service/service.js";
import { bruteForce, byName, eventTimes, queueOf, waitFor } from "../../support/service/events.js";

/**
 * `ingestOnly` has no apply worker; `applier` shares its database and applies. What `applier` writes is not in
 * `ingestOnly`'s cache: it keeps nothing of what it read (CACHE_MB=0).
 */
let ingestOnly: TestService;
let applier: TestService | undefined;
beforeAll(async () => {
  ingestOnly = await startTestService({ EVENT_WORKER: "off", CACHE_MB: "0" });
});
afterAll(async () => {
  await applier?.stop();
  await ingestOnly.stop();
});

const trends = (svc: TestService, key: string, body: object) => svc.postJson("/v1/events/trends", body, key);

describe("POST /v1/events", () => {
  it("answers at once, before the events are applied; they appear once a worker applies them, repeats counted once", async () => {
    const { publicKey, privateKey } = await ingestOnly.createProject();
    const other = await ingestOnly.createProject();
    const times = eventTimes(ingestOnly, 3);
    const days = times.map((t) => t.day);
    const sent: { name: string; player: string; day: string }[] = [];
    const batch = Array.from({ length: 300 }, (_, i) => {
      const { day, timestamp } = times[i % 3];
      const player = `p${i % 37}`;
      const name = i % 4 === 0 ? "level.up" : "login";
      sent.push({ name, player: `u:${player}`, day });
      return { name, partner_user_id: player, timestamp, event_id: `e${i}` };
    });
    const first = await ingestOnly.postJson("/v1/events", { events: batch }, publicKey);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ accepted: 300, rejected: [] });
    expect(typeof first.body.lag_seconds).toBe("number");
    expect(Date.parse(first.body.server_time)).toBeGreaterThan(0);
    // A retry of the first 100 (same event_ids, in another call) and a repeat inside one call count nothing.
    const retry = await ingestOnly.postJson(
      "/v1/events",
      { events: [...batch.slice(0, 100), batch[5], batch[5]] },
      publicKey,
    );
    expect(retry.body.accepted).toBe(102);
    // Another project's events, same names and players: never in this project's charts.
    await ingestOnly.postJson("/v1/events", { events: batch.slice(0, 50) }, other.publicKey);

    const range = { from: days[0], to: days[2] };
    expect((await queueOf(ingestOnly)).queue_depth).toBeGreaterThanOrEqual(452);
    const before = await trends(ingestOnly, privateKey, range);
    expect(before.status).toBe(200);
    expect(before.body.series).toEqual([]);

    applier = await startTestService({ DB_NAME: ingestOnly.config.dbName, LOG_LEVEL: "error" });
    await waitFor(
      () => queueOf(ingestOnly),
      (q) => q.queue_depth === 0,
    );
    const after = await trends(ingestOnly, privateKey, range);
    expect(byName(after.body)).toEqual(bruteForce(sent, days));
    const names = await ingestOnly.postJson("/v1/events/names", range, privateKey);
    expect(names.body.names).toEqual([
      { name: "login", events: "225" },
      { name: "level.up", events: "75" },
    ]);
  });

  it("reserves distinct sequence numbers of a project's queue when ingest calls reserve side by side", async () => {
    // The store the ingest path reserves through, on the service's own database: 40 reservations at once.
    const { projectId } = await ingestOnly.createProject();
    const queue = new QueueStore(ingestOnly.database.db, new KeyedLock());
    const before = await queue.read(projectId);
    const seqs = await Promise.all(Array.from({ length: 40 }, () => queue.reserve(projectId)));
    const after = await queue.read(projectId);
    expect(new Set(seqs).size).toBe(40);
    expect(after.reserved - before.reserved).toBe(40);
    // The numbers get empty segments, so the queue drains to no depth as before.
    const segments = new SegmentStore(ingestOnly.database.db);
    const empty = { projectId, receivedAt: ingestOnly.clock.now(), count: 0, work: null };
    for (const seq of seqs) await segments.insert({ seq, ...empty });
  });

  it("rejects bad events one by one with a code and accepts the rest", async () => {
    const { publicKey } = await ingestOnly.createProject();
    const now = ingestOnly.clock.now();
    const res = await ingestOnly.postJson(
      "/v1/events",
      {
        events: [
          { name: "ok", device_id: "d1" },
          { name: "no_identity" },
          { name: "bad name!", partner_user_id: "a" },
          { name: "future", partner_user_id: "a", timestamp: new Date(now.getTime() + 6 * 60_000).toISOString() },
          { name: "ancient", partner_user_id: "a", timestamp: "2001-01-01T00:00:00Z" },
          { name: "long_id", partner_user_id: "a", event_id: "x".repeat(129) },
          { name: "fat", partner_user_id: "a", properties: { blob: "x".repeat(9000) } },
          {
            name: "many",
            partner_user_id: "a",
            properties: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])),
          },
          { name: "ok.too", partner_user_id: "a", properties: { level: 3, hard: true, map: "north" } },
        ],
      },
      publicKey,
    );
    expect(res.status).toBe(200);
    expect(res.body.accepted).toBe(2);
    expect(res.body.rejected.map((r: { index: number; code: string }) => [r.index, r.code])).toEqual([
      [1, "missing_identity"],
      [2, "bad_name"],
      [3, "bad_timestamp"],
      [4, "bad_timestamp"],
      [5, "bad_event_id"],
      [6, "properties_too_large"],
      [7, "properties_too_large"],
    ]);
    expect(res.body.rejected[0].message).toMatch(/partner_user_id or device_id/);
  });

  it("rejects an event whose timestamp is not RFC 3339 as bad_timestamp and accepts the rest, on /v1 and Connect JSON", async () => {
    const { publicKey } = await ingestOnly.createProject();
    const body = {
      events: [
        { name: "ok", device_id: "d1" },
        { name: "unreadable", device_id: "d1", timestamp: "yesterday" },
        { name: "ok", device_id: "d2" },
      ],
    };
    const connectJson = async (headers: Record<string, string>, bytes: Uint8Array<ArrayBuffer>) => {
      const res = await fetch(`${ingestOnly.baseUrl}/platformapi.v1.EventService/Ingest`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": publicKey, ...headers },
        body: bytes,
      });
      return { status: res.status, body: await res.json() };
    };
    const json = new TextEncoder().encode(JSON.stringify(body));
    for (const res of [
      await ingestOnly.postJson("/v1/events", body, publicKey),
      await connectJson({}, json),
      await connectJson({ "content-encoding": "gzip" }, new Uint8Array(gzipSync(json))),
    ]) {
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.accepted).toBe(2);
      expect(res.body.rejected).toEqual([
        {
          index: 1,
          code: "bad_timestamp",
          message: 'timestamp: not an RFC 3339 timestamp (e.g. "2026-11-22T10:00:00Z")',
        },
      ]);
    }
  });

  it("answers hostile bodies with 4xx and queues nothing", async () => {
    const { publicKey, projectId } = await ingestOnly.createProject();
    const one = { name: "x", partner_user_id: "p" };
    // The queue's counter, not its depth: a worker draining earlier tests' segments moves the depth.
    const queue = new QueueStore(ingestOnly.database.db, new KeyedLock());
    const counters = async () => (await queue.read(projectId)).reserved;
    const before = await counters();
    // Built as text: JSON.stringify itself cannot go this deep.
    const nested = `{"events":[{"name":"x","partner_user_id":"p","properties":${'{"a":'.repeat(20_000)}1${"}".repeat(20_000)}}]}`;
    const bodies: [unknown, number][] = [
      [{ events: Array.from({ length: 1001 }, () => one) }, 400],
      [{ events: [one, { ...one, properties: { nested: { a: 1 } } }] }, 400],
      [{ events: [one, { ...one, properties: { list: [1, 2] } }] }, 400],
      [{ events: [one, { ...one, properties: { $where: "1" } }] }, 400],
      [{ events: [one, { ...one, properties: { nothing: null } }] }, 400],
      [nested, 400],
      [JSON.stringify({ events: [one, { ...one, properties: { huge: "x".repeat(2 * 1024 * 1024) } }] }), 413],
      [{ events: [{ ...one, $set: { x: 1 } }] }, 400],
    ];
    for (const [body, status] of bodies) {
      const res = await ingestOnly.postJson("/v1/events", body, publicKey);
      expect(res.status, JSON.stringify(res.body).slice(0, 200)).toBe(status);
      expect(res.body.code).toMatch(/invalid_argument|resource_exhausted/);
    }
    expect(await counters()).toEqual(before);
  });

  it("needs events:write to ingest and events:read to chart", async () => {
    const { publicKey } = await ingestOnly.createProject();
    expect((await ingestOnly.postJson("/v1/events", { events: [] })).status).toBe(401);
    const [first, last] = eventTimes(ingestOnly, 2);
    const range = { from: first.day, to: last.day };
    expect((await ingestOnly.postJson("/v1/events/trends", range, publicKey)).status).toBe(403);
    expect((await ingestOnly.postJson("/v1/events/names", range, publicKey)).status).toBe(403);
  });
});

describe("date range and cohort filters", () => {
  it("refuse a range over 366 days, from after to, and bad dates or tags, on trends and names alike", async () => {
    const { privateKey } = await ingestOnly.createProject();
    for (const path of ["/v1/events/trends", "/v1/events/names"]) {
      for (const [body, field] of [
        [{ from: "2025-01-01", to: "2026-01-02" }, "from"],
        [{ from: "2025-01-02", to: "2025-01-01" }, "from"],
        [{ from: "2025-02-30", to: "2025-03-01" }, "from"],
        [{ from: "2025-01-01", to: "2025-01-02", tags: ["bad tag!"] }, "tags"],
        [{ from: "2025-01-01", to: "2025-01-02", tags_match: "some" }, "tags_match"],
      ] as const) {
        const res = await ingestOnly.postJson(path, body, privateKey);
        expect(res.status).toBe(400);
        expect(res.body.message.startsWith(`${field}:`), res.body.message).toBe(true);
      }
      const full = await ingestOnly.postJson(path, { from: "2025-01-01", to: "2026-01-01" }, privateKey);
      expect(full.status).toBe(200);
    }
  });
});
