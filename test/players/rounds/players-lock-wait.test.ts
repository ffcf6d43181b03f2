import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UnavailableError } from "../../../src/errors.js";
import type { UpdateEntry } from "../../../src/players/players.js";
import { startTestService, type TestService } from "../../support/service/service.js";
import { playersOn } from "../../support/db/round-points.js";

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc.stop());

const increment = (partnerUserId: string): UpdateEntry => ({
  partnerUserId,
  tagsAdd: [],
  tagsRemove: [],
  traitsIncrement: { visits: 1 },
  traitsUnset: [],
});

describe("a players round waiting on its players' locks", () => {
  it("answers unavailable past the wait limit, having written nothing", async () => {
    const { projectId } = await svc.createProject();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const holding = new Promise<void>((resolve) => (reached = resolve));
    let first = true;
    // The first round holds the player's lock until the test lets it go.
    const { players } = await playersOn(svc.database, {
      point: "afterProfileWrites",
      fault: async () => {
        if (!first) return;
        first = false;
        reached();
        await held;
      },
      lockWaitLimitMs: 200,
    });
    const holder = players.update(projectId, [increment("waiter")]);
    await holding;
    await expect(players.update(projectId, [increment("waiter")])).rejects.toBeInstanceOf(UnavailableError);
    release();
    await holder;
    const found = await players.get(projectId, { partnerUserId: "waiter" });
    expect(found?.traits.get("visits")).toBe(1);
  });
});
