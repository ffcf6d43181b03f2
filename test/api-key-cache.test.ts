import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeyCache } from "../src/admin/api-key-cache.js";
import { generateApiKey, hashApiKey } from "../src/admin/api-keys.js";
import { AdminStore } from "../src/admin/store.js";
import { startTestService, type TestService } from "./support/service.js";

let test: TestService;
let store: AdminStore;
beforeAll(async () => {
  test = await startTestService();
  store = new AdminStore(test.database.db);
});
afterAll(() => test.stop());

const TTL_MS = 5_000;

/** A key stored as the service stores it, and a way to revoke it behind the cache's back. */
async function storedKey() {
  const { keyId, key } = generateApiKey("private");
  const hash = hashApiKey(key);
  await store.insertApiKey(
    { keyId, type: "private", scopes: ["launch:verify"], projectId: "prj_cache", hash },
    new Date(),
  );
  return { keyId, hash, revokeInDatabase: () => store.revokeApiKey(keyId, new Date()) };
}

function cacheWithClock(ttlMs = TTL_MS) {
  const clock = { ms: 1_000_000 };
  return { cache: new ApiKeyCache(store, ttlMs, () => clock.ms), clock };
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

  it("keeps no answer for an unknown key, so a key created a moment later works", async () => {
    const { cache } = cacheWithClock();
    const { key } = generateApiKey("private");
    const hash = hashApiKey(key);
    expect(await cache.findByHash(hash)).toBeNull();
    await store.insertApiKey(
      { keyId: "key_late", type: "private", scopes: [], projectId: "prj_cache", hash },
      new Date(),
    );
    expect((await cache.findByHash(hash))?.keyId).toBe("key_late");
  });

  it("with a ttl of 0 reads the key on every lookup", async () => {
    const { cache } = cacheWithClock(0);
    const key = await storedKey();
    await cache.findByHash(key.hash);
    await key.revokeInDatabase();
    expect((await cache.findByHash(key.hash))?.revokedAt).toBeInstanceOf(Date);
  });
});
