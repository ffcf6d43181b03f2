import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeyCache, ApiKeyStore, generateApiKey, hashApiKey } from "../../src/admin/api-keys.js";
import { startTestService, type TestService } from "../support/service/service.js";

let test: TestService;
let store: ApiKeyStore;
beforeAll(async () => {
  test = await startTestService();
  store = new ApiKeyStore(test.database.db);
});
afterAll(() => test.stop());

const TTL_MS = 5_000;

/** A key stored as the service stores it, and a way to revoke it behind the cache's back. */
async function storedKey() {
  const { keyId, key } = generateApiKey("private");
  const hash = hashApiKey(key);
  await store.insertApiKey(
    { keyId, type: "private", scopes: ["launch:verify"], projectId: "prj_cache", hash },
    test.clock.now(),
  );
  return { keyId, hash, revokeInDatabase: () => store.revokeApiKey(keyId, test.clock.now()) };
}

function cacheWithClock(ttlMs = TTL_MS, maxUnknownKeys?: number) {
  const clock = { ms: 1_000_000 };
  const cache = new ApiKeyCache({ store, ttlMs, clock: { now: () => new Date(clock.ms) }, maxUnknownKeys });
  return { cache, clock };
}

/** A key that is not stored yet, and a way to store it behind the cache's back. */
function unknownKey(keyId: string) {
  const hash = hashApiKey(generateApiKey("private").key);
  return {
    hash,
    store: () =>
      store.insertApiKey({ keyId, type: "private", scopes: [], projectId: "prj_cache", hash }, test.clock.now()),
  };
}

describe("ApiKeyCache", () => {
  it("reuses a lookup until the ttl has passed, then reads the key again", async () => {
    const { cache, clock } = cacheWithClock();
    const key = await storedKey();
    expect((await cache.findByHash(key.hash))?.revokedAt).toBeNull();
    await key.revokeInDatabase();

    clock.ms += TTL_MS - 1;
    expect((await cache.findByHash(key.hash))?.revokedAt).toBeNull();
    clock.ms += 1;
    expect((await cache.findByHash(key.hash))?.revokedAt).toBeInstanceOf(Date);
  });

  it("forgets a key at once when told of its revocation", async () => {
    const { cache } = cacheWithClock();
    const key = await storedKey();
    await cache.findByHash(key.hash);
    await key.revokeInDatabase();
    cache.forget(key.keyId);
    expect((await cache.findByHash(key.hash))?.revokedAt).toBeInstanceOf(Date);
  });

  it("does not keep what a lookup read before a revocation it raced with", async () => {
    const { cache } = cacheWithClock();
    const key = await storedKey();
    const racing = cache.findByHash(key.hash);
    cache.forget(key.keyId);
    expect((await racing)?.revokedAt).toBeNull();
    await key.revokeInDatabase();
    expect((await cache.findByHash(key.hash))?.revokedAt).toBeInstanceOf(Date);
  });

  it("remembers an unknown key for the ttl, then reads it again", async () => {
    const { cache, clock } = cacheWithClock();
    const key = unknownKey("key_late");
    expect(await cache.findByHash(key.hash)).toBeNull();
    await key.store();

    clock.ms += TTL_MS - 1;
    expect(await cache.findByHash(key.hash)).toBeNull();
    clock.ms += 1;
    expect((await cache.findByHash(key.hash))?.keyId).toBe("key_late");
  });

  it("keeps at most maxUnknownKeys unknown keys, dropping the oldest", async () => {
    const { cache } = cacheWithClock(TTL_MS, 2);
    const keys = [unknownKey("key_u0"), unknownKey("key_u1"), unknownKey("key_u2")];
    for (const key of keys) expect(await cache.findByHash(key.hash)).toBeNull();
    await Promise.all(keys.map((key) => key.store()));

    expect((await cache.findByHash(keys[0].hash))?.keyId).toBe("key_u0");
    expect(await cache.findByHash(keys[2].hash)).toBeNull();
  });

  it("shares one read among concurrent lookups of a hash, and asks beforeRead only for that read", async () => {
    const { cache } = cacheWithClock();
    const key = await storedKey();
    let reads = 0;
    const records = await Promise.all(Array.from({ length: 5 }, () => cache.findByHash(key.hash, () => reads++)));
    expect(reads).toBe(1);
    expect(new Set(records.map((record) => record?.keyId))).toEqual(new Set([key.keyId]));
  });

  it("does not read when beforeRead refuses, and remembers a good key past its ttl in lastRead", async () => {
    const { cache, clock } = cacheWithClock();
    const key = await storedKey();
    const refuse = () => {
      throw new Error("refused");
    };
    await expect(cache.findByHash(key.hash, refuse)).rejects.toThrow("refused");
    expect(cache.lastRead(key.hash)).toBeUndefined();

    await cache.findByHash(key.hash);
    clock.ms += 10 * TTL_MS;
    expect(cache.lastRead(key.hash)?.keyId).toBe(key.keyId);
    await expect(cache.findByHash(key.hash, refuse)).rejects.toThrow("refused");
  });

  it("with a ttl of 0 reads the key on every lookup, found or not", async () => {
    const { cache } = cacheWithClock(0);
    const key = await storedKey();
    await cache.findByHash(key.hash);
    await key.revokeInDatabase();
    expect((await cache.findByHash(key.hash))?.revokedAt).toBeInstanceOf(Date);

    const late = unknownKey("key_late0");
    expect(await cache.findByHash(late.hash)).toBeNull();
    await late.store();
    expect((await cache.findByHash(late.hash))?.keyId).toBe("key_late0");
  });
});
