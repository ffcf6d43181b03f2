import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventService } from "../../../gen/platformapi/v1/events_pb.js";
import { API_KEY_HEADER } from "../../../src/server/calls/auth.js";
import { eventTimes, waitFor } from "../../support/service/events.js";
import { ADMIN_KEY, startTestService, type TestService } from "../../support/service/service.js";

let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;
let reader: string;
let range: { from: string; to: string };

/** An answer without the freshness figures, which move between two reads. */
const withoutFreshness = (body: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(body).filter(([field]) => field !== "complete_through" && field !== "lag_seconds"));

beforeAll(async () => {
  svc = await startTestService();
  project = await svc.createProject();
  reader = (await svc.createKey("reader", project.projectId)).key;
  const [time] = eventTimes(svc, 1);
  range = { from: time.day, to: time.day };
  await svc.postOk("/v1/players/update", { players: [{ partner_user_id: "p1", tags: ["vip"] }] }, project.privateKey);
  await svc.postOk(
    "/v1/events",
    { events: [{ name: "match", partner_user_id: "p1", timestamp: time.timestamp }] },
    project.privateKey,
  );
  await waitFor(
    () => svc.postOk("/v1/events/names", range, project.privateKey),
    (body) => body.names.length === 1,
  );
});
afterAll(() => svc.stop());

describe("a reader key", () => {
  it("is made by the admin for a project, with events:read only, and needs the project", async () => {
    const made = await svc.postOk("/v1/admin/api_keys", { project_id: project.projectId, type: "reader" }, ADMIN_KEY);
    expect(made).toMatchObject({ type: "reader", scopes: ["events:read"], project_id: project.projectId });
    expect(made.key).toMatch(/^rk_/);
    const orphan = await svc.postJson("/v1/admin/api_keys", { type: "reader" }, ADMIN_KEY);
    expect(orphan.status).toBe(400);
    expect(orphan.body.message).toContain("project_id");
  });

  it("reads what the private key reads: trends, names, search, get, the tag, trait and property listings", async () => {
    const reads: [string, object][] = [
      ["/v1/events/trends", { ...range, split_by: "tags" }],
      ["/v1/events/names", range],
      ["/v1/players/search", { tags: ["vip"] }],
      ["/v1/players/get", { partner_user_id: "p1" }],
      ["/v1/players/tags", {}],
      ["/v1/players/traits", {}],
      ["/v1/events/properties", {}],
    ];
    for (const [path, body] of reads) {
      const [byReader, byPrivate] = [
        await svc.postJson(path, body, reader),
        await svc.postOk(path, body, project.privateKey),
      ];
      expect(byReader.status, path).toBe(200);
      expect(withoutFreshness(byReader.body), path).toEqual(withoutFreshness(byPrivate));
    }
    const trends = await svc.postOk("/v1/events/trends", range, reader);
    expect(trends.series).toEqual([
      { name: "match", tag: null, variant: null, points: [{ date: range.from, events: 1, players: 1, sum: null }] },
    ]);
  });

  it("is 403 on every write, over /v1 and gRPC, and writes nothing", async () => {
    const [time] = eventTimes(svc, 1);
    const writes: [string, object][] = [
      ["/v1/events", { events: [{ name: "match", partner_user_id: "p2", timestamp: time.timestamp }] }],
      ["/v1/players/update", { players: [{ partner_user_id: "p2", tags: ["vip"] }] }],
      ["/v1/players/tags/update", { tag: "vip", label: "VIP" }],
      ["/v1/players/traits/update", { key: "tier", materialise: true }],
      ["/v1/events/properties/update", { name: "match", property: "score", sum: true }],
      ["/v1/launch_tokens/verify", { token: "x" }],
      ["/v1/players/link", { platform_user_id: "7f1c2a4e-0000-4000-8000-0000000000aa", partner_user_id: "p1" }],
    ];
    for (const [path, body] of writes) {
      const res = await svc.postJson(path, body, reader);
      expect(res.status, path).toBe(403);
      expect(res.body.code, path).toBe("permission_denied");
    }
    const grpc = svc.client(EventService, "grpc");
    await expect(
      grpc.ingest({ events: [{ name: "match", partnerUserId: "p2" }] }, { headers: { [API_KEY_HEADER]: reader } }),
    ).rejects.toSatisfy((error) => error instanceof ConnectError && error.code === Code.PermissionDenied);
    const search = await svc.postOk("/v1/players/search", { tags: ["vip"] }, project.privateKey);
    expect(search.players.map((p: any) => p.partner_user_id)).toEqual(["p1"]);
  });

  it("reads only its own project", async () => {
    const other = await svc.createProject();
    await svc.postOk(
      "/v1/players/update",
      { players: [{ partner_user_id: "p1", tags: ["elsewhere"] }] },
      other.privateKey,
    );
    const tags = await svc.postOk("/v1/players/tags", {}, reader);
    expect(tags.tags.map((t: any) => t.tag)).toEqual(["vip"]);
  });
});
