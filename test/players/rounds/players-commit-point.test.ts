import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { connectDatabase } from "../../../src/db/database.js";
import { UnavailableError } from "../../../src/errors.js";
import type { UpdateEntry } from "../../../src/players/players.js";
import { DbProxy } from "../../support/db/db-proxy.js";
import { playersOn, type RoundPoint } from "../../support/db/round-points.js";
import { startTestService, type TestService } from "../../support/service/service.js";

let svc: TestService;
beforeAll(async () => {
  // The rounds under test run in a Players of the test's own beside the service's: the service keeps nothing of what
  // it read (on the embedded engine it would not see those writes; one instance owns its database).
  svc = await startTestService({ CACHE_MB: "0" });
});
afterAll(() => svc.stop());

const entry = (ops: Partial<UpdateEntry>): UpdateEntry => ({
  tagsAdd: [],
  tagsRemove: [],
  traitsIncrement: {},
  traitsUnset: [],
  ...ops,
});

/** A Players on the service's database whose fault point throws `unavailable` the first time it is reached. */
async function failingOnce(point: RoundPoint) {
  let fired = false;
  const fault = () => {
    if (fired) return;
    fired = true;
    throw new UnavailableError("the database went away");
  };
  return (await playersOn(svc.database, { point, fault })).players;
}

/** Players reaching the service's database through a proxy the test cuts; `fault` runs at `point`, once. */
async function throughProxy(point: RoundPoint, fault: (proxy: DbProxy) => void) {
  const proxy = await DbProxy.start(inject("mongodbUri"));
  const database = await connectDatabase(proxy.uri, svc.config.dbName, { timeoutMs: 1_000 });
  let fired = false;
  const { players } = await playersOn(database, {
    point,
    fault: () => {
      if (!fired) fault(proxy);
      fired = true;
    },
  });
  const close = async () => {
    await database.close();
    proxy.cut();
  };
  return { proxy, players, close };
}

async function project() {
  const { projectId, privateKey } = await svc.createProject();
  return {
    projectId,
    privateKey,
    update: (players: unknown[]) => svc.postJson("/v1/players/update", { players }, privateKey),
    /** Players found by a search of `tag` and the tag's players_count: what the tag's set says. */
    cohort: async (tag: string) => {
      const search = await svc.postJson("/v1/players/search", { tags: [tag] }, privateKey);
      const tags = await svc.postJson("/v1/players/tags", { page: 1, page_size: 100 }, privateKey);
      const count = tags.body.tags.find((t: any) => t.tag === tag)?.players_count;
      return { found: search.body.players_info.total, count };
    },
  };
}

describe("the profile write is a round's commit point", () => {
  it("a failure after it answers the entry applied, once, and its sets follow without a restart", async () => {
    const p = await project();
    const players = await failingOnce("afterProfileWrites");

    const {
      outcomes: [outcome],
    } = await players.update(p.projectId, [
      entry({ partnerUserId: "vip-1", tagsAdd: ["vip"], traitsIncrement: { n: 1 } }),
    ]);
    expect(outcome.ok && outcome.value).toMatchObject({ identityKey: "u:vip-1", tags: ["vip"] });
    const got = await svc.postJson("/v1/players/get", { partner_user_id: "vip-1" }, p.privateKey);
    expect(got.body.profile.traits).toEqual({ n: 1 });

    // Completed in the background: no repair pass, no other write.
    await expect.poll(() => p.cohort("vip"), { timeout: 10_000 }).toEqual({ found: 1, count: 1 });
    // A later write of the player moves its sets from there.
    expect((await p.update([{ partner_user_id: "vip-1", tags_remove: ["vip"] }])).status).toBe(200);
    expect(await p.cohort("vip")).toEqual({ found: 0, count: 0 });
  });
});

describe("a failure during a round's profile writes", () => {
  it("fails the call, and the sets follow the profiles as they were left, without a restart", async () => {
    const p = await project();
    await p.update([{ partner_user_id: "gina", tags_add: ["own"] }]);
    await p.update([{ device_id: "tablet", tags_add: ["stray"] }]);
    expect(await p.cohort("stray")).toEqual({ found: 1, count: 1 });
    const players = await failingOnce("afterTombstones");

    // The fold writes the device's tombstone, then fails before the player's profile.
    const folding = players.update(p.projectId, [entry({ partnerUserId: "gina", deviceId: "tablet" })]);
    await expect(folding).rejects.toBeInstanceOf(UnavailableError);

    // The device's profile is gone and the player's not written yet: nobody carries "stray" now.
    await expect.poll(() => p.cohort("stray"), { timeout: 10_000 }).toEqual({ found: 0, count: 0 });
    expect(await p.cohort("own")).toEqual({ found: 1, count: 1 });

    // The retry completes the fold from the tombstone's snapshot: counted once.
    const retried = await p.update([{ partner_user_id: "gina", device_id: "tablet" }]);
    expect(retried.body.updated[0].tags).toEqual(["own", "stray"]);
    expect(await p.cohort("stray")).toEqual({ found: 1, count: 1 });
  });
});

describe("the database failing for real around a round's profile writes", () => {
  it("cut right after them: the call answers applied, and the sets follow once the database is back", async () => {
    const p = await project();
    const { proxy, players, close } = await throughProxy("afterProfileWrites", (proxy) => proxy.cut());
    try {
      // A device-only entry: the call also reads the device's link after its rounds (a late fold).
      const {
        outcomes: [outcome],
      } = await players.update(p.projectId, [entry({ deviceId: "guest-1", tagsAdd: ["cut"] })]);
      expect(outcome.ok && outcome.value.tags).toEqual(["cut"]);
      // Search and the count read the tag's set: both wait for it.
      expect(await p.cohort("cut")).toEqual({ found: 0, count: 0 });
      await proxy.restore();
      await expect.poll(() => p.cohort("cut"), { timeout: 20_000 }).toEqual({ found: 1, count: 1 });
    } finally {
      await close();
    }
  });

  it("a lost reply of the profile write: the call fails, the profile is written, and its sets follow it", async () => {
    const p = await project();
    const { proxy, players, close } = await throughProxy("afterTombstones", (proxy) => proxy.dropReplies());
    try {
      const call = players.update(p.projectId, [entry({ partnerUserId: "unsure", tagsAdd: ["lost_reply"] })]);
      await expect(call).rejects.toThrow();
      const got = await svc.postJson("/v1/players/get", { partner_user_id: "unsure" }, p.privateKey);
      expect(got.body.profile.tags).toEqual(["lost_reply"]);
      await proxy.restore();
      await expect.poll(() => p.cohort("lost_reply"), { timeout: 20_000 }).toEqual({ found: 1, count: 1 });
    } finally {
      await close();
    }
  });
});
