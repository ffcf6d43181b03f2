import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/platformapi/v1/admin_pb.js";
import { ADMIN_KEY, startTestService, type TestService } from "../support/service/service.js";

let test: TestService;
beforeAll(async () => {
  test = await startTestService({ RATE_LIMIT_PER_SECOND: "1", RATE_LIMIT_BURST: "3" });
});
afterAll(() => test.stop());

describe("rate limit per API key", () => {
  it("answers 429 with Retry-After once a key's burst is spent, without slowing other keys", async () => {
    test.clock.freeze(); // at one request a second, a slow machine would refill a token between the calls
    const { key } = await test.createKey("admin"); // spends one of ADMIN_KEY's three
    const call = (apiKey: string) =>
      test.postJson(
        "/v1/admin/entitlements",
        { platform_user_id: "7f1c2a4e-0000-4000-8000-0000000000aa", game_id: 9 },
        apiKey,
      );

    expect((await call(ADMIN_KEY)).status).toBe(200);
    expect((await call(ADMIN_KEY)).status).toBe(200);
    const limited = await call(ADMIN_KEY);
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe("resource_exhausted");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);

    const overGrpc = test
      .client(AdminService)
      .setEntitlement(
        { platformUserId: "7f1c2a4e-0000-4000-8000-0000000000aa", gameId: 9 },
        { headers: { "x-api-key": ADMIN_KEY } },
      );
    await expect(overGrpc).rejects.toMatchObject({ code: Code.ResourceExhausted });

    expect((await call(key)).status).toBe(200);
  });
});
