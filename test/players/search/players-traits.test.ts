import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlayerService } from "../../../gen/platformapi/v1/players_pb.js";
import { waitFor } from "../../support/service/events.js";
import { startTestService, type TestService } from "../../support/service/service.js";

let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;

const list = (body: object, key = project.privateKey) => svc.postJson("/v1/players/traits", body, key);
const keysOf = (body: any) => body.traits.map((trait: any) => trait.key);

beforeAll(async () => {
  svc = await startTestService();
  project = await svc.createProject();
  const other = await svc.createProject();
  const update = (players: object[], key: string) => svc.postJson("/v1/players/update", { players }, key);
  expect((await update([{ partner_user_id: "p1", traits: { tier: "gold", Zeta: 1 } }], project.publicKey)).status).toBe(
    200,
  );
  expect((await update([{ partner_user_id: "p2", traits: { alpha: true, level: 3 } }], project.publicKey)).status).toBe(
    200,
  );
  expect((await update([{ partner_user_id: "p1", traits: { elsewhere: 1 } }], other.publicKey)).status).toBe(200);
});
afterAll(() => svc.stop());

describe("players/traits", () => {
  it("lists the project's trait keys alone, in code point order, none materialised yet", async () => {
    const res = await list({});
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      traits: ["Zeta", "alpha", "level", "tier"].map((key) => ({ key, materialised: false, ready: false })),
      traits_info: { total: 4, pages: 1, page: 1 },
    });
  });

  it("pages with page_size and refuses page 0 or a page_size over 100, naming the field", async () => {
    const second = await list({ page: 2, page_size: 3 });
    expect(keysOf(second.body)).toEqual(["tier"]);
    expect(second.body.traits_info).toEqual({ total: 4, pages: 2, page: 2 });
    expect(keysOf((await list({ page: 3, page_size: 3 })).body)).toEqual([]);
    const pageZero = await list({ page: 0 });
    expect(pageZero.status).toBe(400);
    expect(pageZero.body.message).toContain("page");
    const tooBig = await list({ page_size: 101 });
    expect(tooBig.status).toBe(400);
    expect(tooBig.body.message).toContain("page_size");
  });

  it("needs events:read: the public key is refused with 403", async () => {
    const res = await list({}, project.publicKey);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("permission_denied");
  });

  it("shows a materialised key, then ready once its backfill is applied, over gRPC too", async () => {
    const enabled = await svc.postJson(
      "/v1/players/traits/update",
      { key: "tier", materialise: true },
      project.privateKey,
    );
    expect(enabled.status).toBe(200);
    const listed = await list({});
    expect(listed.body.traits.find((trait: any) => trait.key === "tier")).toMatchObject({ materialised: true });
    expect(listed.body.traits.filter((trait: any) => trait.materialised).map((trait: any) => trait.key)).toEqual([
      "tier",
    ]);

    const grpc = svc.client(PlayerService, "grpc");
    const headers = { "x-api-key": project.privateKey };
    const answer = await waitFor(
      () => grpc.listTraits({ page: 2, pageSize: 2 }, { headers }),
      (page) => page.traits.some((trait) => trait.key === "tier" && trait.ready),
    );
    expect(answer.traits.map(({ key, materialised, ready }) => ({ key, materialised, ready }))).toEqual([
      { key: "level", materialised: false, ready: false },
      { key: "tier", materialised: true, ready: true },
    ]);
    expect(answer.traitsInfo).toMatchObject({ total: 4, pages: 2, page: 2 });
    const refused = await grpc.listTraits({}, { headers: { "x-api-key": project.publicKey } }).catch((e) => e);
    expect(ConnectError.from(refused).code).toBe(Code.PermissionDenied);
  });
});
