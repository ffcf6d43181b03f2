import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { base64url } from "jose";
import nacl from "tweetnacl";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LaunchStore } from "../../src/launch/store.js";
import { createLaunchFixture, type LaunchFixture } from "../support/service/launch.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

let test: TestService;
let launch: LaunchFixture;
beforeAll(async () => {
  test = await startTestService();
  launch = await createLaunchFixture(test);
});
afterAll(() => test.stop());

async function jwks(): Promise<{
  keys: { kty: string; crv: string; x: string; kid: string; alg: string; use: string }[];
}> {
  const res = await fetch(`${test.baseUrl}/v1/.well-known/jwks.json`);
  expect(res.status).toBe(200);
  return res.json();
}

/** Checks a token's signature with tweetnacl, an implementation independent of node's crypto and jose. */
async function verifiesWithTweetnacl(token: string): Promise<boolean> {
  const [header, payload, signature] = token.split(".");
  const { kid } = JSON.parse(new TextDecoder().decode(base64url.decode(header)));
  const key = (await jwks()).keys.find((k) => k.kid === kid);
  if (!key) return false;
  return nacl.sign.detached.verify(
    new TextEncoder().encode(`${header}.${payload}`),
    base64url.decode(signature),
    base64url.decode(key.x),
  );
}

const rotate = () => test.postJson("/v1/admin/signing_keys/rotate", {}, ADMIN_KEY);

describe("signing keys", () => {
  it("publishes Ed25519 public keys as a JWKS, without a key", async () => {
    const { keys } = await jwks();
    expect(keys.length).toBeGreaterThanOrEqual(1);
    for (const key of keys) {
      expect(key).toEqual({
        kty: "OKP",
        crv: "Ed25519",
        x: expect.stringMatching(/^[\w-]{43}$/),
        kid: expect.any(String),
        alg: "EdDSA",
        use: "sig",
      });
    }
    expect(JSON.stringify(keys)).not.toMatch(/"d"/);
  });

  it("every issued signature verifies with tweetnacl, and a tampered one does not", async () => {
    for (let i = 0; i < 5; i++) {
      const { token } = await launch.issue();
      expect(await verifiesWithTweetnacl(token)).toBe(true);
      expect(await verifiesWithTweetnacl(token.replace(/\.(.)/, (_, c) => `.${c === "e" ? "f" : "e"}`))).toBe(false);
    }
  });

  it("rotation: new tokens carry the new kid, old tokens still verify, both keys are published", async () => {
    const { token: old } = await launch.issue();
    const oldKid = JSON.parse(new TextDecoder().decode(base64url.decode(old.split(".")[0]))).kid;

    const rotated = await rotate();
    expect(rotated.status).toBe(200);
    expect(rotated.body.kid).not.toBe(oldKid);

    const { token: fresh } = await launch.issue();
    const freshKid = JSON.parse(new TextDecoder().decode(base64url.decode(fresh.split(".")[0]))).kid;
    expect(freshKid).toBe(rotated.body.kid);
    expect((await jwks()).keys.map((k) => k.kid)).toEqual(expect.arrayContaining([oldKid, freshKid]));
    expect(await verifiesWithTweetnacl(fresh)).toBe(true);

    expect((await launch.verify(old)).body.valid).toBe(true);
    expect((await launch.verify(fresh)).body.valid).toBe(true);
  });

  it("an old key leaves the JWKS once no token it signed can still be valid", async () => {
    const { token } = await launch.issue();
    const kid = JSON.parse(new TextDecoder().decode(base64url.decode(token.split(".")[0]))).kid;
    await rotate();
    expect((await jwks()).keys.map((k) => k.kid)).toContain(kid);
    test.clock.advance(3 * 60_000);
    try {
      expect((await jwks()).keys.map((k) => k.kid)).not.toContain(kid);
    } finally {
      test.clock.advance(-3 * 60_000);
    }
  });

  it("rotation needs the admin scope", async () => {
    expect((await test.postJson("/v1/admin/signing_keys/rotate", {}, launch.privateKey)).status).toBe(403);
  });

  it("platformctl keys rotate rotates", async () => {
    const before = new Set((await jwks()).keys.map((k) => k.kid));
    const { stdout } = await promisify(execFile)(
      "node",
      ["bin/platformctl.js", "--url", test.baseUrl, "keys", "rotate"],
      {
        env: { ...process.env, PLATFORM_ADMIN_KEY: ADMIN_KEY },
      },
    );
    const { kid } = JSON.parse(stdout);
    expect(before.has(kid)).toBe(false);
    expect((await jwks()).keys.map((k) => k.kid)).toContain(kid);
  });

  it("platformctl keys list prints the JWKS, with no key needed", async () => {
    const env = { ...process.env };
    delete env.PLATFORM_ADMIN_KEY;
    const { stdout } = await promisify(execFile)(
      "node",
      ["bin/platformctl.js", "--url", test.baseUrl, "keys", "list"],
      {
        env,
      },
    );
    expect(JSON.parse(stdout)).toEqual(await jwks());
  });

  it("never stores a private key where an API reads it, and never answers one", async () => {
    const stored = await test.database.db.collection("signing_keys").find().toArray();
    const published = JSON.stringify(await jwks());
    for (const doc of stored) expect(published).not.toContain(String(doc.private_key_pem).split("\n")[1]);
  });
});

describe("token documents", () => {
  it("expired token documents are swept; validity never depended on them", async () => {
    const { token } = await launch.issue();
    const store = new LaunchStore(test.database.db);
    const jti = JSON.parse(new TextDecoder().decode(base64url.decode(token.split(".")[1]))).jti;
    const tokens = test.database.db.collection("launch_tokens");
    expect(await tokens.countDocuments({ _id: jti as unknown as never })).toBe(1);
    await store.deleteExpiredTokens(new Date(test.clock.now().getTime() + 120_000));
    expect(await tokens.countDocuments({ _id: jti as unknown as never })).toBe(0);
  });
});
