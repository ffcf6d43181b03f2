import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { LaunchTokenService } from "../../gen/platformapi/v1/launch_pb.js";
import { createLaunchFixture, type LaunchFixture } from "../support/service/launch.js";
import { startTestService, type TestService } from "../support/service/service.js";

// A valid verify answers the verified player's config and experiments as of now: a tag acknowledged before the
// verify, and a config change made before it, are in it.

let svc: TestService;
let launch: LaunchFixture;
beforeAll(async () => {
  svc = await startTestService();
  launch = await createLaunchFixture(svc);
  await svc.postOk(
    "/v1/players/link",
    { platform_user_id: launch.platformUserId, partner_user_id: "hero" },
    launch.privateKey,
  );
});
afterAll(() => svc.stop());

const studio = (path: string, body: object) => svc.postOk(path, body, launch.privateKey);
async function verified() {
  const { token } = await launch.issue();
  const res = await launch.verify(token);
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ valid: true, partner_user_id: "hero" });
  return res.body as { config: Record<string, unknown>; experiments: Record<string, string> };
}

describe("the verify answer", () => {
  it("answers an empty config and no experiments for a project without them, and for a rejected token", async () => {
    expect(await verified()).toMatchObject({ config: {}, experiments: {} });
    const rejected = await launch.verify("not-a-token");
    expect(rejected.body).toMatchObject({ valid: false, error: "invalid_token", config: {}, experiments: {} });
  });

  it("answers the in_launch entries for the player's cohort now: a tag acknowledged before the verify is in it", async () => {
    await studio("/v1/config/update", {
      key: "shop",
      default_value: "plain",
      rules: [{ tags: ["vip"], value: { layout: "gold", discount: 0.2 } }],
      in_launch: true,
    });
    await studio("/v1/config/update", { key: "hidden", default_value: 1 });
    expect((await verified()).config).toEqual({ shop: "plain" });

    await studio("/v1/players/update", { players: [{ partner_user_id: "hero", tags_add: ["VIP"] }] });
    expect((await verified()).config).toEqual({ shop: { layout: "gold", discount: 0.2 } });
    await studio("/v1/players/update", { players: [{ partner_user_id: "hero", tags_remove: ["vip"] }] });
    expect((await verified()).config).toEqual({ shop: "plain" });
  });

  it("answers a config change in the next verify, and an experiment's variant once it runs", async () => {
    await studio("/v1/config/update", { key: "shop", default_value: "changed", in_launch: true });
    await studio("/v1/config/update", { key: "hidden", default_value: 2, in_launch: true });
    expect((await verified()).config).toEqual({ shop: "changed", hidden: 2 });
    await studio("/v1/config/delete", { key: "hidden" });
    expect((await verified()).config).toEqual({ shop: "changed" });

    const variants = [
      { name: "a", weight: 1 },
      { name: "b", weight: 1 },
    ];
    await studio("/v1/experiments/update", { name: "onboarding", variants, state: "draft" });
    expect((await verified()).experiments).toEqual({});
    await studio("/v1/experiments/update", { name: "onboarding", state: "running" });
    await studio("/v1/experiments/update", { name: "vips_only", variants, tags: ["vip"], state: "running" });
    const { experiments } = await verified();
    expect(Object.keys(experiments)).toEqual(["onboarding"]);
    expect(["a", "b"]).toContain(experiments.onboarding);
  });

  it("carries the config as protobuf Values over gRPC, gRPC-Web and Connect, binary or JSON", async () => {
    const connectBinary = createClient(
      LaunchTokenService,
      createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
    );
    const clients = [
      svc.client(LaunchTokenService, "grpc"),
      svc.client(LaunchTokenService, "grpc-web"),
      svc.client(LaunchTokenService, "connect"),
      connectBinary,
    ];
    for (const client of clients) {
      const { token } = await launch.issue();
      const answer = await client.verify({ token }, { headers: { "x-api-key": launch.privateKey } });
      expect(answer.valid).toBe(true);
      expect(Object.keys(answer.config)).toEqual(["shop"]);
      expect(answer.config.shop.kind).toEqual({ case: "stringValue", value: "changed" });
      expect(Object.keys(answer.experiments)).toEqual(["onboarding"]);
      expect(["a", "b"]).toContain(answer.experiments.onboarding);
      expect(answer.$unknown ?? []).toEqual([]);
    }
  });
});
