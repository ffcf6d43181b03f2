import { MongoClient, type Db } from "mongodb";
import type { Logger } from "../log.js";
import { withDeadline } from "./deadline-db.js";
import { watchHeartbeats } from "./heartbeat-watchdog.js";

/** An open connection to the service's database. */
export interface Database {
  client: MongoClient;
  db: Db;
  /**
   * True on FerretDB, which lacks TTL indexes, partial indexes, `$lookup`,
   * transactions and pipeline updates; stores pick their fallbacks from it.
   */
  isFerretDb: boolean;
  /** Deadline of one operation (Config.dbTimeoutMs); waits in the process's own queues are bounded by it too. */
  timeoutMs: number;
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** Deadline of one operation, in milliseconds (Config.dbTimeoutMs). */
  timeoutMs?: number;
  /** Where a reconnect after a stuck driver monitor is reported. */
  log?: Logger;
}

/**
 * Connects with every phase of an operation bounded by `timeoutMs`: finding
 * the server, getting a connection (opening one included) and waiting for the
 * reply. Driver 7 ignores `timeoutMS` (CSOT), so the phases are bounded one by
 * one. Writes are retryable: the driver retries a write once after a failover
 * only where the server deduplicates it (a replica set or a sharded cluster,
 * by transaction number), so a primary stepping down mid-write is not a 503;
 * on a standalone server, FerretDB and the test engines included, it never
 * retries. Reads are not retried: a retry would double the wait.
 */
export async function connectDatabase(
  uri: string,
  dbName: string,
  { timeoutMs = 2_000, log }: ConnectOptions = {},
): Promise<Database> {
  const client = new MongoClient(uri, {
    serverSelectionTimeoutMS: timeoutMs,
    waitQueueTimeoutMS: timeoutMs,
    connectTimeoutMS: timeoutMs,
    socketTimeoutMS: timeoutMs,
    retryReads: false,
    retryWrites: true,
    // The service times every command for its metrics (src/server/calls/metrics.ts).
    monitorCommands: true,
  });
  await client.connect();
  const db = withDeadline(client.db(dbName), timeoutMs);
  const buildInfo = await db.admin().command({ buildInfo: 1 });
  // A heartbeat is a connect and a hello, each bounded by connectTimeoutMS; one outstanding a whole deadline and
  // 2 s longer (event-loop lag on a loaded machine) is stuck. A hung monitor never recovers, so waiting costs little.
  const watchdog = watchHeartbeats(client, { stuckAfterMs: 3 * timeoutMs + 2_000, log });
  return {
    client,
    db,
    isFerretDb: "ferretdbVersion" in buildInfo,
    timeoutMs,
    close: async () => {
      await watchdog.stop();
      await client.close();
    },
  };
}
