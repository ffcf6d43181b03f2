import { randomBytes } from "node:crypto";
import type { Db } from "mongodb";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { connectDatabase, type Database } from "../../src/db/database.js";
import { acquireLease, LeaseHeldError, type LeaseOptions } from "../../src/db/lease.js";
import { createLogger } from "../../src/log.js";
import { TestClock } from "../support/service/service.js";

// The lease that makes one instance the owner of a FerretDB database, on the run's database server.
const TTL_MS = 15_000;
let database: Database;
let db: Db;
beforeAll(async () => {
  database = await connectDatabase(inject("mongodbUri"), "admin");
});
beforeEach(() => {
  db = database.client.db(`test_lease_${randomBytes(6).toString("hex")}`);
});
afterEach(() => db.dropDatabase());
afterAll(() => database.close());

function leaseOptions(clock: TestClock, lost: string[] = []): LeaseOptions {
  return { db, clock, ttlMs: TTL_MS, log: createLogger("silent"), onLost: (reason) => lost.push(reason) };
}

describe("the database lease", () => {
  it("is refused while its holder renews it, taken over once expired, and the old holder learns it lost", async () => {
    const ownerClock = new TestClock();
    const ownerLost: string[] = [];
    const owner = await acquireLease(leaseOptions(ownerClock, ownerLost));

    const newcomerClock = new TestClock();
    newcomerClock.advance(TTL_MS - 1_000);
    await expect(acquireLease(leaseOptions(newcomerClock))).rejects.toThrow(LeaseHeldError);
    await expect(acquireLease(leaseOptions(newcomerClock))).rejects.toThrow(
      `another service instance owns database "${db.databaseName}" on this FerretDB: process ${process.pid}`,
    );

    // A renewal moves the expiry: the same moment no longer finds the lease expired.
    ownerClock.advance(TTL_MS - 2_000);
    expect(await owner.renew()).toBe(true);
    newcomerClock.advance(2_000);
    await expect(acquireLease(leaseOptions(newcomerClock))).rejects.toThrow(LeaseHeldError);

    // The owner stops renewing (it died); once its claim has expired, the newcomer takes over.
    newcomerClock.advance(TTL_MS);
    const newcomer = await acquireLease(leaseOptions(newcomerClock));
    expect(ownerLost).toEqual([]);
    expect(await owner.renew()).toBe(false);
    expect(ownerLost).toHaveLength(1);
    expect(ownerLost[0]).toContain("took over the database lease");

    await newcomer.release();
    await owner.release();
  });

  it("lets the next instance in at once after a release, and an embedded owner take over an unexpired lease", async () => {
    const clock = new TestClock();
    const first = await acquireLease(leaseOptions(clock));
    await first.release();
    const secondLost: string[] = [];
    const second = await acquireLease(leaseOptions(clock, secondLost));
    await expect(acquireLease(leaseOptions(clock))).rejects.toThrow(LeaseHeldError);

    const takenOver = await acquireLease({ ...leaseOptions(clock), takeOver: true });
    expect(await second.renew()).toBe(false);
    await takenOver.release();
    await second.release();
    expect(secondLost).toHaveLength(1);
  });
});
