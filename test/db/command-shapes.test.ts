import type { CommandStartedEvent } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shapesOf, shapeText, type CommandShape, type FilterShape } from "../support/commands.js";
import { eventTimes, queueOf, waitFor } from "../support/service/events.js";
import { createLaunchFixture } from "../support/service/launch.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

/**
 * Every query the service sends on the MongoDB path rides an index it declares (issue 47, "What to build" 3): the
 * commands of one run through every room's calls (players, events written, applied and read, erasure, players/data,
 * export, launch, admin and project config), the apply worker's and the sweeps' included, each checked by its
 * filter's fields against the indexes found in the database (`_id`'s and every createIndex of src). mongo-java-server
 * only: the embedded engine answers no query by an index but `_id`'s (src/db/engine.ts, `queryIndexes`).
 */

/**
 * Queries that ride no index, each with why that is bounded. Keyed by the shape's text (shapeText): a new filter of
 * the same collection is a new line, not covered by an old reason.
 */
const ALLOWED: Record<string, string> = {
  "find projects {} sort [game_id]":
    "admin projects/list: a page of the platform's projects, walked by game_id's index",
  "aggregate projects {}": "admin projects/list's total: the platform's projects, one document each",
  "find api_keys {} sort [created_at, key_id]": "admin api_keys/list of every project: a page of the platform's keys",
  "aggregate api_keys {}": "admin api_keys/list's total: the platform's keys, a few a project",
  "find signing_keys {} sort [created_at]": "the keyring: a handful of signing keys, read whole on a timer",
  "find event_queues {}": "the worker's look at the queues: one document a project",
  "find event_workers {}": "the apply workers alive: one document an instance, expiring by TTL",
  "find event_parked {} sort [_id]": "admin list of every project's parked segments: the few that kept failing",
  "find launch_follow_ups {}": "the sweep of owed follow-ups: a batch of at most 500 (SWEEP_BATCH), any of them due",
  "find player_registry_counters {}": "the repair of the registry's counts at start: one document a project",
};

/** Operators an index answers: an equality, `$in`, a range (a `$regex` the service writes is a prefix). */
const BY_INDEX = new Set(["=", "$eq", "$in", "$gt", "$gte", "$lt", "$lte", "$regex", "$all"]);

/** Whether some index leads with a field the filter bounds by an operator indexes answer (each `$or` branch too). */
function indexed(filter: FilterShape, indexes: readonly string[][]): boolean {
  const leads = indexes.some(([first]) => {
    const ops = filter.fields[first];
    return ops !== undefined && ops.every((op) => BY_INDEX.has(op));
  });
  return leads || (filter.or.length > 0 && filter.or.every((branch) => indexed(branch, indexes)));
}

let svc: TestService;
const seen = new Map<string, CommandShape>();

beforeAll(async () => {
  svc = await startTestService(
    // The launch records' sweep each second, so its query runs within the test.
    { LAUNCH_SWEEP_SECONDS: "1" },
    {
      beforeStart: (database) =>
        database.client.on("commandStarted", (event: CommandStartedEvent) => {
          for (const shape of shapesOf(event)) seen.set(shapeText(shape), shape);
        }),
    },
  );
});
afterAll(() => svc.stop());

describe("every query on the MongoDB path", () => {
  it("rides a declared index, or is on the allowlist with its bound", async () => {
    await runEveryRoom(svc);
    const indexes = new Map<string, string[][]>();
    for (const { name } of await svc.database.db.listCollections({}, { nameOnly: true }).toArray()) {
      const specs = await svc.database.db.collection(name).listIndexes().toArray();
      indexes.set(name, [["_id"], ...specs.map((spec) => Object.keys(spec.key))]);
    }
    const unindexed = [...seen]
      .filter(
        ([text, shape]) => !(text in ALLOWED) && !indexed(shape.filter, indexes.get(shape.collection) ?? [["_id"]]),
      )
      .map(([text]) => text);
    expect(unindexed).toEqual([]);
    // The run reached every room: a query of each of their collections.
    const collections = new Set([...seen.values()].map((shape) => shape.collection));
    for (const name of [
      "player_profiles",
      "player_sets",
      "event_queues",
      "event_activity",
      "event_raw",
      "launch_tokens_unspent",
    ])
      expect(collections, name).toContain(name);
  });
});

/** One of each call, with data enough that each reads something: the queue drained before the reads. */
async function runEveryRoom(svc: TestService): Promise<void> {
  const launch = await createLaunchFixture(svc);
  const post = (path: string, body: object, key = launch.privateKey) => svc.postOk(path, body, key);
  const [earlier, later] = eventTimes(svc, 2);

  // Launch: a token issued, verified, the keyring rotated and published.
  const { token } = await launch.issue();
  expect((await launch.verify(token)).body).toMatchObject({ valid: true });
  await post("/v1/admin/signing_keys/rotate", {}, ADMIN_KEY);
  expect((await fetch(`${svc.baseUrl}/v1/.well-known/jwks.json`)).status).toBe(200);

  // Admin and the project's config.
  const { keyId } = await svc.createKey("reader", launch.projectId);
  await post("/v1/admin/projects/list", { page: 1 }, ADMIN_KEY);
  await post("/v1/admin/api_keys/list", {}, ADMIN_KEY);
  await post("/v1/admin/api_keys/list", { project_id: launch.projectId }, ADMIN_KEY);
  await post("/v1/admin/entitlements/list", { platform_user_id: launch.platformUserId }, ADMIN_KEY);
  await post("/v1/admin/entitlements/list", { game_id: launch.gameId }, ADMIN_KEY);
  await post("/v1/admin/api_keys/revoke", { key_id: keyId }, ADMIN_KEY);
  await post("/v1/admin/events/parked", {}, ADMIN_KEY);
  await post("/v1/admin/events/parked", { project_id: launch.projectId }, ADMIN_KEY);
  const retry = { project_id: launch.projectId, seq: 1 };
  expect((await svc.postJson("/v1/admin/events/parked/retry", retry, ADMIN_KEY)).status).toBe(404);
  await post("/v1/project/get", {});
  await post("/v1/events/properties/update", { name: "buy", property: "coins", sum: true });

  // Players: written, a device folded into a partner id, linked, tags and traits listed and described.
  const players = Array.from({ length: 40 }, (_, i) => ({
    partner_user_id: `p${i}`,
    tags: i % 2 === 0 ? ["even"] : ["odd"],
    traits: { level: i % 5 },
  }));
  await post("/v1/players/update", { players, request_id: "first" });
  await post("/v1/players/update", { players: [{ device_id: "phone", tags_add: ["guest"] }] }, launch.publicKey);
  const events = players.flatMap((player, i) => [
    { name: "open", partner_user_id: player.partner_user_id, timestamp: earlier.timestamp, event_id: `o${i}` },
    { name: "buy", partner_user_id: player.partner_user_id, timestamp: later.timestamp, properties: { coins: i } },
  ]);
  await post("/v1/events", { events: [...events, { name: "open", device_id: "phone", timestamp: later.timestamp }] });
  await post("/v1/players/update", { players: [{ device_id: "phone", partner_user_id: "p0" }] });
  await post("/v1/players/link", { platform_user_id: launch.platformUserId, partner_user_id: "p1" });
  await post("/v1/players/traits/update", { key: "level", materialise: true });
  await post("/v1/players/tags/update", { tag: "even", category: "parity" });
  await post("/v1/players/tags", { page: 1 });
  await post("/v1/players/traits", { page: 1 });
  await waitFor(
    () => queueOf(svc),
    (queue) => queue.queue_depth === 0,
  );

  // Reads.
  await post("/v1/players/get", { partner_user_id: "p2" });
  await post("/v1/players/get", { device_id: "phone" });
  await post("/v1/players/search", { tags: ["even"], traits: { level: 2 } });
  await post("/v1/players/export", { tags: ["odd"] });
  await post("/v1/players/export", {});
  await post("/v1/players/data", { partner_user_id: "p0" });
  const range = { from: earlier.day, to: later.day };
  const split = { split_by: "tags", tags: ["even", "odd"] };
  await post("/v1/events/trends", { ...range, names: ["buy"], sum: "coins" });
  await post("/v1/events/trends", { ...range, interval: "week", ...split });
  await post("/v1/events/names", { ...range, tags: ["even"] });
  await post("/v1/events/properties", {});
  await post("/v1/events/retention", { ...range, ...split });
  await post("/v1/events/retention", { ...range, return_name: "buy", traits: { level: 1 } });
  await post("/v1/events/active", { ...range, ...split });

  // Erasure of a player with events and a device, then what is left of them.
  expect(await post("/v1/players/delete", { partner_user_id: "p0" })).toMatchObject({ deleted: true });
  await waitFor(
    () => queueOf(svc),
    (queue) => queue.queue_depth === 0,
  );
  await post("/v1/players/data", { device_id: "phone" });
  await post("/v1/players/update", {
    players: [{ partner_user_id: "p2", tags_remove: ["even"] }],
    request_id: "first",
  });
}
