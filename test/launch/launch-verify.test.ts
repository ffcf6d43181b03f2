import { createPrivateKey, randomUUID } from "node:crypto";
import { SignJWT, base64url, decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LaunchTokenService } from "../../gen/platformapi/v1/launch_pb.js";
import { createLaunchFixture, type LaunchFixture } from "../support/service/launch.js";
import { startTestService, type TestService } from "../support/service/service.js";

let test: TestService;
let launch: LaunchFixture;
beforeAll(async () => {
  test = await startTestService();
  launch = await createLaunchFixture(test);
});
afterAll(() => test.stop());

/**
 * A rejected verify as /v1 writes it: the identity fields, unset, are null (DESIGN: null versus absent); the player's
 * config and experiments, maps, are empty.
 */
function rejected(error: string) {
  const identity = { platform_user_id: null, partner_user_id: null, installation_id: null };
  return { valid: false, ...identity, issued_at: null, entitlement: null, error, config: {}, experiments: {} };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Replaces the character at `index` of `text` with a different base64url character. */
function flip(text: string, index: number): string {
  return text.slice(0, index) + (text[index] === "A" ? "B" : "A") + text.slice(index + 1);
}

/** The service's current signing key, read from its database as an attacker with the key could sign. */
async function serverSigningKey() {
  const doc = await test.database.db
    .collection<{ _id: string; private_key_pem: string }>("signing_keys")
    .find()
    .sort({ created_at: -1 })
    .next();
  return { kid: doc!._id, key: createPrivateKey(doc!.private_key_pem) };
}

describe("issue", () => {
  it("answers the token, its expiry and the environment for the game process", async () => {
    const before = Math.floor(test.clock.now().getTime() / 1000);
    const issued = await launch.issue();
    expect(issued.token.split(".")).toHaveLength(3);
    expect(issued.env.PLATFORM_LAUNCH_TOKEN).toBe(issued.token);
    expect(issued.env.PLATFORM_TOKEN_EXPIRES_AT).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const expiresAt = Date.parse(issued.env.PLATFORM_TOKEN_EXPIRES_AT) / 1000;
    expect(expiresAt - before).toBeGreaterThanOrEqual(59);
    expect(expiresAt - before).toBeLessThanOrEqual(61);
    expect(Date.parse(issued.expires_at) / 1000).toBe(expiresAt);
  });

  it("puts the designed header and claims in the token", async () => {
    const { token } = await launch.issue();
    const header = decodeProtectedHeader(token);
    expect(header).toMatchObject({ alg: "EdDSA", typ: "JWT" });
    expect(typeof header.kid).toBe("string");
    const claims = JSON.parse(new TextDecoder().decode(base64url.decode(token.split(".")[1])));
    expect(claims).toMatchObject({
      iss: "platform",
      sub: launch.platformUserId,
      aud: launch.projectId,
      installation_id: launch.installationId,
      game_id: launch.gameId,
      channel_id: "beta",
      build_version: "1.2.3",
    });
    expect(claims.exp - claims.iat).toBe(60);
    expect(claims.jti).toMatch(UUID);
  });

  it("refuses a user who does not own the game (403), an unknown game (404), and bad ids (400)", async () => {
    const stranger = await test.postJson(
      "/v1/launch_tokens/issue",
      { platform_user_id: randomUUID(), installation_id: randomUUID(), game_id: launch.gameId },
      launch.platformKey,
    );
    expect(stranger.status).toBe(403);
    expect(stranger.body.code).toBe("permission_denied");

    const unknownGame = await test.postJson(
      "/v1/launch_tokens/issue",
      { platform_user_id: launch.platformUserId, installation_id: randomUUID(), game_id: 999_999_999 },
      launch.platformKey,
    );
    expect(unknownGame.status).toBe(404);

    const badId = await test.postJson(
      "/v1/launch_tokens/issue",
      { platform_user_id: "not-a-uuid", installation_id: randomUUID(), game_id: launch.gameId },
      launch.platformKey,
    );
    expect(badId.status).toBe(400);
    expect(badId.body.message).toBe("platform_user_id: must be a UUID");
  });

  it("is refused to studio keys: only the platform key has launch:issue", async () => {
    for (const key of [launch.privateKey, launch.publicKey]) {
      const res = await test.postJson("/v1/launch_tokens/issue", { game_id: launch.gameId }, key);
      expect(res.status).toBe(403);
    }
  });
});

describe("verify", () => {
  it("answers every field of a valid result over /v1 JSON", async () => {
    const { token } = await launch.issue();
    const res = await launch.verify(token);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      valid: true,
      platform_user_id: launch.platformUserId,
      partner_user_id: expect.stringMatching(/^pp_[\w-]{22}$/),
      installation_id: launch.installationId,
      issued_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      entitlement: { owns: true, source: "STORE", game_id: launch.gameId, channel_id: "beta", build_version: "1.2.3" },
      error: null,
      // The project has no config entries or experiments (test/config/config-launch.test.ts has them).
      config: {},
      experiments: {},
    });
  });

  it("answers the same over gRPC, and already_used the second time", async () => {
    const { token } = await launch.issue();
    const client = test.client(LaunchTokenService);
    const headers = { "x-api-key": launch.privateKey };
    const first = await client.verify({ token }, { headers });
    expect(first.valid).toBe(true);
    expect(first.platformUserId).toBe(launch.platformUserId);
    expect(first.installationId).toBe(launch.installationId);
    expect(first.entitlement).toMatchObject({
      owns: true,
      gameId: launch.gameId,
      channelId: "beta",
      buildVersion: "1.2.3",
    });
    const second = await client.verify({ token }, { headers });
    expect(second).toMatchObject({ valid: false, error: "already_used" });
    expect(second.platformUserId).toBeUndefined();
  });

  it("already_used on the second verify over JSON, with null for every identity field", async () => {
    const { token } = await launch.issue();
    expect((await launch.verify(token)).body.valid).toBe(true);
    const again = await launch.verify(token);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(rejected("already_used"));
  });

  it("expired once the lifetime has passed, over JSON and gRPC", async () => {
    const { token } = await launch.issue();
    const { token: other } = await launch.issue();
    test.clock.advance(61_000);
    try {
      expect((await launch.verify(token)).body).toEqual(rejected("expired"));
      const overGrpc = await test
        .client(LaunchTokenService)
        .verify({ token: other }, { headers: { "x-api-key": launch.privateKey } });
      expect(overGrpc).toMatchObject({ valid: false, error: "expired" });
    } finally {
      test.clock.advance(-61_000);
    }
  });

  it("partner_user_id is the linked one once the studio links it", async () => {
    const link = await test.postJson(
      "/v1/players/link",
      { platform_user_id: launch.platformUserId, partner_user_id: "studio-user-42" },
      launch.privateKey,
    );
    expect(link.status).toBe(200);
    expect(link.body).toEqual({ platform_user_id: launch.platformUserId, partner_user_id: "studio-user-42" });
    const { token } = await launch.issue();
    expect((await launch.verify(token)).body.partner_user_id).toBe("studio-user-42");
    const publicLink = await test.postJson(
      "/v1/players/link",
      { platform_user_id: launch.platformUserId, partner_user_id: "x" },
      launch.publicKey,
    );
    expect(publicLink.status).toBe(403);
  });

  it("reads ownership at verify time: a refund after issue shows owns: false", async () => {
    const other = await createLaunchFixture(test);
    const { token } = await other.issue();
    await other.setOwnership(false);
    const res = await other.verify(token);
    expect(res.body.valid).toBe(true);
    expect(res.body.entitlement.owns).toBe(false);
  });

  it("403 for the public key, over JSON and gRPC, and the token stays usable", async () => {
    const { token } = await launch.issue();
    const res = await launch.verify(token, launch.publicKey);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("permission_denied");
    await expect(
      test.client(LaunchTokenService).verify({ token }, { headers: { "x-api-key": launch.publicKey } }),
    ).rejects.toMatchObject({ code: 7 });
    expect((await launch.verify(token)).body.valid).toBe(true);
  });

  it("of 100 concurrent verifies of one token, exactly one is valid", async () => {
    const { token } = await launch.issue();
    const answers = await Promise.all(Array.from({ length: 100 }, () => launch.verify(token)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.filter((a) => a.body.valid)).toHaveLength(1);
    expect(answers.filter((a) => a.body.error === "already_used")).toHaveLength(99);
  });
});

describe("verify refuses forgeries as invalid_token", () => {
  const cases: [string, (token: string) => Promise<string> | string][] = [
    ["garbage", () => "not a token"],
    ["an empty token", () => ""],
    ["three dots of nothing", () => ".."],
    ["a flipped payload byte", (t) => flip(t, t.indexOf(".") + 5)],
    ["a flipped signature byte", (t) => flip(t, t.lastIndexOf(".") + 5)],
    [
      "alg: none",
      (t) => {
        const [, payload] = t.split(".");
        return `${base64url.encode(JSON.stringify({ alg: "none", typ: "JWT" }))}.${payload}.`;
      },
    ],
    [
      "an HS256 token signed with the public key",
      async (t) => {
        const jwks = await (await fetch(`${test.baseUrl}/v1/.well-known/jwks.json`)).json();
        const claims = JSON.parse(new TextDecoder().decode(base64url.decode(t.split(".")[1])));
        return new SignJWT(claims)
          .setProtectedHeader({ alg: "HS256", typ: "JWT", kid: jwks.keys[0].kid })
          .sign(base64url.decode(jwks.keys[0].x));
      },
    ],
    [
      "an unknown kid",
      async (t) => {
        const { key } = await serverSigningKey();
        const claims = JSON.parse(new TextDecoder().decode(base64url.decode(t.split(".")[1])));
        return new SignJWT(claims).setProtectedHeader({ alg: "EdDSA", typ: "JWT", kid: "not-a-key" }).sign(key);
      },
    ],
  ];

  for (const [name, forge] of cases) {
    it(`for ${name}, over JSON and gRPC`, async () => {
      const { token } = await launch.issue();
      const forged = await forge(token);
      expect((await launch.verify(forged)).body).toEqual(rejected("invalid_token"));
      const overGrpc = await test
        .client(LaunchTokenService)
        .verify({ token: forged }, { headers: { "x-api-key": launch.privateKey } });
      expect(overGrpc).toMatchObject({ valid: false, error: "invalid_token" });
      // The genuine token was not spent by the forgeries.
      expect((await launch.verify(token)).body.valid).toBe(true);
    });
  }
});

describe("verify answers unknown_token", () => {
  it("for a well-signed token the service never issued, every time it is presented", async () => {
    const { kid, key } = await serverSigningKey();
    const now = Math.floor(test.clock.now().getTime() / 1000);
    const token = await new SignJWT({
      installation_id: launch.installationId,
      game_id: launch.gameId,
      channel_id: "",
      build_version: "",
    })
      .setProtectedHeader({ alg: "EdDSA", typ: "JWT", kid })
      .setIssuer("platform")
      .setSubject(launch.platformUserId)
      .setAudience(launch.projectId)
      .setJti(randomUUID())
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(key);
    expect((await launch.verify(token)).body).toEqual(rejected("unknown_token"));
    expect((await launch.verify(token)).body).toEqual(rejected("unknown_token"));
  });

  it("for another project's token, which stays valid for its own project", async () => {
    const other = await createLaunchFixture(test);
    const { token } = await other.issue();
    expect((await launch.verify(token)).body).toEqual(rejected("unknown_token"));
    const overGrpc = await test
      .client(LaunchTokenService)
      .verify({ token }, { headers: { "x-api-key": launch.privateKey } });
    expect(overGrpc).toMatchObject({ valid: false, error: "unknown_token" });
    expect((await other.verify(token)).body.valid).toBe(true);
  });
});
