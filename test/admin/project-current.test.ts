import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProjectService } from "../../gen/platformapi/v1/project_pb.js";
import { API_KEY_HEADER } from "../../src/server/calls/auth.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

let svc: TestService;
let project: Awaited<ReturnType<TestService["createProject"]>>;
let other: Awaited<ReturnType<TestService["createProject"]>>;

beforeAll(async () => {
  svc = await startTestService();
  project = await svc.createProject("Star Fields");
  other = await svc.createProject("Other Game");
});
afterAll(() => svc.stop());

describe("project/get: the calling key's own project", () => {
  it("names the project and the key's type to a private and a reader key, each its own project only", async () => {
    expect(await svc.postOk("/v1/project/get", {}, project.privateKey)).toEqual({
      project: { project_id: project.projectId, name: "Star Fields", game_id: project.gameId },
      key_type: "private",
    });
    const reader = (await svc.createKey("reader", other.projectId)).key;
    expect(await svc.postOk("/v1/project/get", {}, reader)).toEqual({
      project: { project_id: other.projectId, name: "Other Game", game_id: other.gameId },
      key_type: "reader",
    });
    // Over gRPC too, the same answer.
    const grpc = svc.client(ProjectService);
    const answer = await grpc.getCurrent({}, { headers: { [API_KEY_HEADER]: project.privateKey } });
    expect(answer.project?.name).toBe("Star Fields");
  });

  it("refuses a public key (no events:read), the admin key and an unknown key", async () => {
    const publicKey = await svc.postJson("/v1/project/get", {}, project.publicKey);
    expect(publicKey.status).toBe(403);
    expect(publicKey.body.message).toBe("this API key (public) lacks the scope events:read");
    expect((await svc.postJson("/v1/project/get", {}, ADMIN_KEY)).status).toBe(403);
    expect((await svc.postJson("/v1/project/get", {}, "prv_" + "x".repeat(40))).status).toBe(401);
    const grpc = svc.client(ProjectService);
    const refused = await grpc
      .getCurrent({}, { headers: { [API_KEY_HEADER]: project.publicKey } })
      .catch((error: unknown) => error);
    expect(ConnectError.from(refused).code).toBe(Code.PermissionDenied);
  });
});
