import { toJson } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlayerService, UpdateResponseSchema } from "../../../gen/platformapi/v1/players_pb.js";
import { createLaunchFixture, type LaunchFixture } from "../../support/service/launch.js";
import { startTestService, type TestService } from "../../support/service/service.js";

// The public key ships in game clients and holds events:write only: a players/update answer tells it what happened
// to its call and nothing it could not read (docs/api.md, "What a key without events:read reads").
let svc: TestService;
let launch: LaunchFixture;
beforeAll(async () => {
  svc = await startTestService();
  launch = await createLaunchFixture(svc);
  // The studio tags the device; the player signs in and a verify links the device to them.
  const tagged = await svc.postJson(
    "/v1/players/update",
    { players: [{ device_id: launch.installationId, tags_add: ["cheater_flagged"] }] },
    launch.privateKey,
  );
  expect(tagged.status).toBe(200);
  const link = { platform_user_id: launch.platformUserId, partner_user_id: "hero-7" };
  expect((await svc.postJson("/v1/players/link", link, launch.privateKey)).status).toBe(200);
  expect((await launch.verify((await launch.issue()).token)).body).toMatchObject({ valid: true });
});
afterAll(() => svc.stop());

/** An entry with no operation, one with a tag that is dropped, one that names no player. */
const entries = () => [
  { device_id: launch.installationId },
  { device_id: launch.installationId, tags_add: ["seen", "bad tag!"] },
  { tags_add: ["x"] },
];

/** What the key may not read: the player's partner id, platform user id, tags. */
const secrets = () => ["hero-7", launch.platformUserId, "cheater_flagged", "u:"];

describe("players/update with the public key", () => {
  it("answers over /v1 what happened to each entry and nothing of the player; the private key's answer is whole", async () => {
    const publicAnswer = await svc.postJson("/v1/players/update", { players: entries() }, launch.publicKey);
    expect(publicAnswer.status).toBe(200);
    const privateAnswer = await svc.postJson("/v1/players/update", { players: entries() }, launch.privateKey);
    expect(privateAnswer.status).toBe(200);

    const dropped = [{ field: "tags_add", item: "bad tag!", reason: expect.any(String) }];
    const rejected = [
      { index: 2, partner_user_id: null, device_id: null, code: "missing_identity", message: expect.any(String) },
    ];
    const unsaid = { identity_key: "", partner_user_id: null, platform_user_id: null, linked: false, tags: [] };
    expect(publicAnswer.body).toEqual({
      success: true,
      updated: [
        { ...unsaid, device_id: launch.installationId, dropped: [] },
        { ...unsaid, device_id: launch.installationId, dropped },
      ],
      rejected,
      server_time: expect.any(String),
    });
    for (const secret of secrets()) expect(JSON.stringify(publicAnswer.body)).not.toContain(secret);

    const player = {
      identity_key: "u:hero-7",
      partner_user_id: "hero-7",
      // The linked player's profile is the partner's: the device routes to it.
      device_id: null,
      platform_user_id: launch.platformUserId,
      linked: true,
    };
    expect(privateAnswer.body).toEqual({
      success: true,
      updated: [
        { ...player, tags: ["cheater_flagged", "seen"], dropped: [] },
        { ...player, tags: ["cheater_flagged", "seen"], dropped },
      ],
      rejected,
      server_time: expect.any(String),
    });
  });

  it("answers the same over gRPC and Connect, and a request_id's replay by what the caller may read", async () => {
    const players = entries().map(({ device_id, tags_add }) => ({ deviceId: device_id, tagsAdd: tags_add }));
    for (const protocol of ["grpc", "connect"] as const) {
      const client = svc.client(PlayerService, protocol);
      const call = (key: string) =>
        client.update({ players, requestId: `replay-${protocol}` }, { headers: { "x-api-key": key } });
      // The private key's call runs first and keeps its whole answer; the public key's retry replays it.
      const whole = await call(launch.privateKey);
      const replayed = await call(launch.publicKey);
      expect(whole.updated.map((player) => player.identityKey)).toEqual(["u:hero-7", "u:hero-7"]);
      expect(
        replayed.updated.map(({ identityKey, partnerUserId, platformUserId, linked, tags }) => ({
          identityKey,
          partnerUserId,
          platformUserId,
          linked,
          tags,
        })),
      ).toEqual([
        { identityKey: "", partnerUserId: undefined, platformUserId: undefined, linked: false, tags: [] },
        { identityKey: "", partnerUserId: undefined, platformUserId: undefined, linked: false, tags: [] },
      ]);
      expect(replayed.updated.map((player) => player.dropped)).toEqual(whole.updated.map((player) => player.dropped));
      expect(replayed.rejected).toEqual(whole.rejected);
      const text = JSON.stringify(toJson(UpdateResponseSchema, replayed));
      for (const secret of secrets()) expect(text).not.toContain(secret);
      // And the private key's own retry still gets the whole answer.
      expect((await call(launch.privateKey)).updated.map((player) => player.tags)).toEqual(
        whole.updated.map((player) => player.tags),
      );
    }
  });

  it("echoes the partner id an entry sent, and only that", async () => {
    const res = await svc.postJson(
      "/v1/players/update",
      { players: [{ partner_user_id: "hero-7", tags_add: ["again"] }] },
      launch.publicKey,
    );
    expect(res.body.updated).toEqual([
      {
        identity_key: "",
        partner_user_id: "hero-7",
        device_id: null,
        platform_user_id: null,
        linked: false,
        tags: [],
        dropped: [],
      },
    ]);
  });
});
