import { afterAll, beforeAll, expect, it } from "vitest";
import { projectScopedId } from "../../../src/db/ids.js";
import { PLAYER_PROFILES } from "../../../src/players/storage/profile-store.js";
import { playerWriteContention } from "../../support/service/metrics.js";
import { startTestService, type TestService } from "../../support/service/service.js";

/**
 * A player's profile that other writers keep changing: the service's compare-and-swap loop gives
 * up after its attempts and the call fails with `aborted`, having changed nothing. Runs on an engine
 * that isolates updates per document (see vitest.config.ts).
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

/**
 * Writers that bump the profile's version as fast as the database lets them, as a crowd of other
 * instances would; storage-level on purpose, since no caller of the API can write that often.
 */
function bumpVersionsUntilStopped(projectId: string, identityKey: string): () => Promise<void> {
  const profiles = svc.database.db.collection<{ _id: string }>(PLAYER_PROFILES);
  const _id = projectScopedId(projectId, identityKey);
  let running = true;
  const writers = Array.from({ length: 8 }, async () => {
    while (running) await profiles.updateOne({ _id }, { $inc: { version: 1 } });
  });
  return async () => {
    running = false;
    await Promise.all(writers);
  };
}

it("a write that keeps losing races fails with aborted and changes nothing; the next one applies", async () => {
  const { projectId, publicKey, privateKey } = await svc.createProject();
  const increment = () =>
    svc.postJson(
      "/v1/players/update",
      { players: [{ partner_user_id: "hot", traits_increment: { coins: 1 } }] },
      publicKey,
    );
  const coins = async () =>
    (await svc.postJson("/v1/players/get", { partner_user_id: "hot" }, privateKey)).body.profile.traits.coins;
  await svc.postJson("/v1/players/update", { players: [{ partner_user_id: "hot", traits: { coins: 0 } }] }, publicKey);
  const before = await playerWriteContention(svc);

  // Most calls lose every attempt under this load; a few may win one. Up to 10 calls, until one is refused.
  const stop = bumpVersionsUntilStopped(projectId, "u:hot");
  let appliedCalls = 0;
  let refused;
  try {
    for (let i = 0; i < 10 && !refused; i++) {
      const res = await increment();
      if (res.status === 200) appliedCalls++;
      else refused = res;
    }
  } finally {
    await stop();
  }

  expect(refused).toMatchObject({ status: 409, body: { code: "aborted", message: expect.stringMatching(/retry/) } });
  const after = await playerWriteContention(svc);
  expect(after.exhausted - before.exhausted).toBe(1);
  // Each refused call lost every one of its 20 attempts to a version that had moved.
  expect(after.conflicts - before.conflicts).toBeGreaterThanOrEqual(20);
  expect(await coins()).toBe(appliedCalls);

  // Once the other writers stop, the retry the message asks for applies.
  expect((await increment()).status).toBe(200);
  expect(await coins()).toBe(appliedCalls + 1);
});
