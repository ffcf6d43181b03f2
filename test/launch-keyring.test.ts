import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Keyring } from "../src/launch/keyring.js";
import { LaunchStore } from "../src/launch/store.js";
import { startTestService, TestClock, type TestService } from "./support/service.js";

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
    expect(ours.signingKey().kid).toBe(rotated.kid);
  });

  it("retires a replaced key one token lifetime and a minute of skew after its successor", async () => {
    const clock = new TestClock();
    const keyring = new Keyring({ store: new LaunchStore(test.database.db), tokenTtlMs: 60_000, clock });
    await keyring.start();
    const old = keyring.signingKey();
    await keyring.rotate();
    clock.advance(119_000);
    expect(await keyring.verificationKey(old.kid)).toBeDefined();
    clock.advance(2_000);
    expect(await keyring.verificationKey(old.kid)).toBeUndefined();
  });
});
