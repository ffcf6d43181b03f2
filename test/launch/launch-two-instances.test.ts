import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EntitlementStore } from "../../src/admin/entitlement-store.js";
import { entitle } from "../support/service/launch.js";
import { startTestService, type TestService } from "../support/service/service.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

// Two instances on one MongoDB database, each with its own store and in-process lock: there, each `$set` of its
// own fields is applied to the document in isolation, so the admin's and the launch's writes never undo each other.
describe("two instances writing one user's entitlement and launch record", () => {
  it("entitlement writes on one and partner links and installations on the other all land", async () => {
    const [admin, launch] = [new EntitlementStore(svc.database.db), new EntitlementStore(svc.database.db)];
    const gameId = 9_000_000 + Math.floor(Math.random() * 1_000_000);
    const users = Array.from({ length: 40 }, () => crypto.randomUUID());
    await Promise.all(users.map((user) => entitle(admin, user, gameId, false)));
    await Promise.all(
      users.flatMap((user) => [
        entitle(admin, user, gameId, true),
        launch.setPartnerLink(user, gameId, `p-${user}`, svc.clock.now()),
        launch.rememberInstallation(user, gameId, `p-${user}`, "install-1"),
      ]),
    );
    const records = await Promise.all(users.map((user) => admin.findUserGame(user, gameId)));
    expect(
      records.map(({ entitlement, launch }) => [entitlement?.owns, launch.partnerUserId, launch.installations]),
    ).toEqual(users.map((user) => [true, `p-${user}`, ["install-1"]]));
  });
});
