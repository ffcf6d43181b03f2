import { randomUUID } from "node:crypto";
import os from "node:os";
import type { Collection, Db } from "mongodb";
import type { Clock } from "../clock.js";
import type { Logger } from "../log.js";
import { isDuplicateKey } from "./errors.js";

/**
 * One instance's claim on a FerretDB database. Each claim is a document of its
 * own, created by an insert (atomic on `_id`, the one thing FerretDB isolates
 * between clients) and then written by its holder only; the claim with the
 * highest epoch is the lease.
 */
interface LeaseDocument {
  _id: string;
  epoch: number;
  /** A random id of the holding instance. */
  owner: string;
  pid: number;
  host: string;
  expiresAt: Date;
}

const COLLECTION = "instance_lease";

export class LeaseHeldError extends Error {
  constructor(dbName: string, holder: LeaseDocument) {
    super(
      `another service instance owns database "${dbName}" on this FerretDB: process ${holder.pid} on ${holder.host}, ` +
        `whose lease runs until ${holder.expiresAt.toISOString()} unless it renews it. FerretDB does not isolate ` +
        "concurrent updates between processes, so one instance owns a FerretDB database: stop the other instance, " +
        "or run several instances on MongoDB. If the other instance is gone, start again once its lease has expired.",
    );
    this.name = "LeaseHeldError";
  }
}

export interface LeaseOptions {
  db: Db;
  clock: Clock;
  /** How long a claim lasts unless renewed; it is renewed every third of that. */
  ttlMs: number;
  log: Logger;
  /**
   * Take the lease even from a holder whose claim has not expired. Only for the
   * instance that just started the embedded database on files it has locked:
   * an earlier holder can no longer reach them.
   */
  takeOver?: boolean;
  /** Called once when another instance has taken the lease; this one must stop writing. */
  onLost: (reason: string) => void;
}

export interface HeldLease {
  /** Extends the claim; resolves false (and calls onLost) when another instance has taken the lease. */
  renew(): Promise<boolean>;
  /** Stops renewing and ends the claim now, so the next instance takes the lease without waiting. */
  release(): Promise<void>;
}

/**
 * Claims the database for this instance, or throws LeaseHeldError while
 * another instance's claim has not expired. The claim is renewed until
 * release(); renewals that fail (database unreachable) are retried.
 */
export async function acquireLease(options: LeaseOptions): Promise<HeldLease> {
  const { db, clock, ttlMs, log } = options;
  const leases = db.collection<LeaseDocument>(COLLECTION);
  const latest = await leases.find().sort({ epoch: -1 }).limit(1).next();
  if (latest && latest.expiresAt > clock.now() && !options.takeOver) throw new LeaseHeldError(db.databaseName, latest);

  const epoch = (latest?.epoch ?? 0) + 1;
  const claim: LeaseDocument = {
    _id: `claim/${epoch}`,
    epoch,
    owner: randomUUID(),
    pid: process.pid,
    host: os.hostname(),
    expiresAt: new Date(clock.now().getTime() + ttlMs),
  };
  try {
    await leases.insertOne(claim);
  } catch (error) {
    if (!isDuplicateKey(error)) throw error;
    const winner = await leases.findOne({ _id: claim._id });
    throw new LeaseHeldError(db.databaseName, winner ?? claim);
  }
  await leases.deleteMany({ epoch: { $lt: epoch } });
  if (latest) log.info({ previous: { pid: latest.pid, host: latest.host } }, "took over the database lease");
  return holdLease(leases, claim, options);
}

function holdLease(leases: Collection<LeaseDocument>, claim: LeaseDocument, options: LeaseOptions): HeldLease {
  const { clock, ttlMs, log, onLost } = options;
  let lost = false;
  let renewing = false;

  const renew = async (): Promise<boolean> => {
    if (lost) return false;
    const expiresAt = new Date(clock.now().getTime() + ttlMs);
    const { matchedCount } = await leases.updateOne({ _id: claim._id, owner: claim.owner }, { $set: { expiresAt } });
    // Checked after the update: a claim made before it is seen now, one made after it at the next renewal.
    const next = await leases.findOne({ _id: `claim/${claim.epoch + 1}` });
    if (matchedCount === 1 && !next) return true;
    lost = true;
    clearInterval(timer);
    onLost(
      next ? `process ${next.pid} on ${next.host} took over the database lease` : "the database lease was removed",
    );
    return false;
  };

  const timer = setInterval(() => {
    if (renewing) return;
    renewing = true;
    renew()
      .catch((err: unknown) => log.warn({ err }, "could not renew the database lease; retrying"))
      .finally(() => (renewing = false));
  }, ttlMs / 3);
  timer.unref();

  return {
    renew,
    async release() {
      clearInterval(timer);
      if (lost) return;
      lost = true;
      await leases.updateOne({ _id: claim._id, owner: claim.owner }, { $set: { expiresAt: clock.now() } });
    },
  };
}
