import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Keyring } from "../../src/launch/keyring.js";
import { LaunchStore } from "../../src/launch/store.js";
import { createLaunchFixture } from "../support/service/launch.js";
import { ADMIN_KEY, startTestService, TestClock, type TestService } from "../support/service/service.js";

let test: TestService;
beforeAll(async () => {
  test = await startTestService();
});
afterAll(() => test.stop());

describe("Keyring", () => {
  it("finds a key another instance rotated in, once its reload interval has passed", async () => {
    const store = new LaunchStore(test.database.db);
    const clock = new TestClock();
    const options = { store, tokenTtlMs: 60_000, clock };
    const ours = new Keyring(options);
    await ours.start();
    const theirs = new Keyring(options);
    await theirs.start();

    const rotated = await theirs.rotate();
    clock.advance(1_000);
    // Within the interval an unknown kid does not cost a reload: a flood of made-up kids stays cheap.
    expect(await ours.verificationKey(rotated.kid)).toBeUndefined();
    clock.advance(5_000);
    expect((await ours.verificationKey(rotated.kid))?.kid).toBe(rotated.kid);
    expect((await ours.signingKey()).kid).toBe(rotated.kid);
  });

  it("signs with a key another instance rotated in within 30 s, long before the replaced key retires", async () => {
    const store = new LaunchStore(test.database.db);
    const clock = new TestClock();
    const ours = new Keyring({ store, tokenTtlMs: 60_000, clock });
    await ours.start();
    const theirs = new Keyring({ store, tokenTtlMs: 60_000, clock });
    await theirs.start();
    const replaced = await ours.signingKey();

    const rotated = await theirs.rotate();
    clock.advance(29_000);
    expect((await ours.signingKey()).kid).toBe(replaced.kid);
    clock.advance(2_000);
    expect((await ours.signingKey()).kid).toBe(rotated.kid);
  });

  it("retires a replaced key one token lifetime and a minute of skew after its successor", async () => {
    const clock = new TestClock();
    const keyring = new Keyring({ store: new LaunchStore(test.database.db), tokenTtlMs: 60_000, clock });
    await keyring.start();
    const old = await keyring.signingKey();
    await keyring.rotate();
    clock.advance(119_000);
    expect(await keyring.verificationKey(old.kid)).toBeDefined();
    clock.advance(2_000);
    expect(await keyring.verificationKey(old.kid)).toBeUndefined();
  });
});

describe("many rotations", () => {
  it("keep the JWKS and the stored keys bounded, and every unexpired token verifies", async () => {
    const clock = new TestClock();
    clock.advance(-60 * 60_000);
    const service = await startTestService({}, { clock });
    try {
      const launch = await createLaunchFixture(service);
      const keysPublished = async () =>
        ((await (await fetch(`${service.baseUrl}/v1/.well-known/jwks.json`)).json()) as { keys: unknown[] }).keys
          .length;
      // A rotation every 15 s: a key verifies for 60 s of token lifetime and 60 s of skew after its successor.
      const bound = (60_000 + 60_000) / 15_000 + 1;
      const unverified: string[] = [];
      for (let i = 0; i < 40; i++) {
        unverified.push((await launch.issue()).token);
        clock.advance(15_000);
        expect((await service.postJson("/v1/admin/signing_keys/rotate", {}, ADMIN_KEY)).status).toBe(200);
        // 45 s old and signed two keys back: still valid.
        if (unverified.length === 3) expect((await launch.verify(unverified.shift()!)).body.valid).toBe(true);
        expect(await keysPublished()).toBeLessThanOrEqual(bound);
        expect(await service.database.db.collection("signing_keys").countDocuments()).toBeLessThanOrEqual(bound);
      }
      for (const token of unverified) expect((await launch.verify(token)).body.valid).toBe(true);
    } finally {
      await service.stop();
    }
  });
});
