import { systemClock } from "./clock.js";
import { ConfigError, loadConfig } from "./config.js";
import { ensureDashboardBuilt } from "./dashboard/build.js";
import { connectDatabase, type Database } from "./db/database.js";
import { startEmbeddedDb, type EmbeddedDb } from "./db/embedded.js";
import { needsOwner } from "./db/engine.js";
import { acquireLease, LeaseHeldError, type HeldLease } from "./db/lease.js";
import { DatabaseInUseError, NoDatabaseError } from "./db/process.js";
import { createLogger } from "./log.js";
import { bindPort, PortInUseError, type BoundPort } from "./server/http/listener.js";
import { startService, type RunningService } from "./server/service.js";

let config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(2);
}
const log = createLogger(config.logLevel);

let port: BoundPort | undefined;
let embedded: EmbeddedDb | undefined;
let database: Database | undefined;
let lease: HeldLease | undefined;
let service: RunningService | undefined;

let stopping = false;
async function shutdown(reason: string, exitCode = 0): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ reason }, "shutting down: finishing in-flight requests");
  await (service ?? port)?.close();
  await lease
    ?.release()
    .catch((err: unknown) => log.warn({ error: (err as Error)?.message }, "could not release the database lease"));
  await database?.close();
  await embedded?.stop();
  log.info("stopped");
  process.exit(exitCode);
}

/**
 * A start-up refusal the operator must act on: one clear line on stderr, no stack trace. Exit code 2 for what
 * the machine lacks or its configuration (a port, a database, one that stops answering the start's work), 1 for a
 * database another instance owns.
 */
async function refuse(error: Error, exitCode: number): Promise<never> {
  log.fatal({ reason: error.message }, "refusing to start");
  process.stderr.write(`refusing to start: ${error.message}\n`);
  await shutdown("refused to start", exitCode);
  throw error; // unreachable: shutdown exits
}

try {
  // The port first: one held by another process refuses the start before a database starts or DATA_DIR is made.
  port = await bindPort(config.port, config.host);
} catch (error) {
  if (error instanceof PortInUseError) await refuse(error, 2);
  throw error;
}
try {
  if ((await ensureDashboardBuilt()) === "built") log.info("built the dashboard");
  let uri = config.mongodbUri;
  if (uri === undefined) {
    embedded = await startEmbeddedDb({
      kind: config.embeddedDb,
      dataDir: config.dataDir,
      mongodBinary: config.mongodBinary,
      buildCacheDir: config.buildCacheDir,
      log,
    });
    uri = embedded.uri;
  }
  database = await connectDatabase(uri, config.dbName, { timeoutMs: config.dbTimeoutMs, log });
  if (needsOwner(database)) {
    // One instance owns a FerretDB database: it does not isolate concurrent updates between processes.
    lease = await acquireLease({
      db: database.db,
      clock: systemClock,
      ttlMs: config.dbLeaseSeconds * 1000,
      log,
      takeOver: embedded !== undefined,
      onLost: (reason) => {
        log.fatal({ reason }, "another instance took over the database; stopping so that no write is lost");
        void shutdown("database lease lost", 1);
      },
    });
  }
} catch (error) {
  if (error instanceof NoDatabaseError) await refuse(error, 2);
  if (error instanceof DatabaseInUseError || error instanceof LeaseHeldError) await refuse(error, 1);
  throw error;
}
try {
  service = await startService({ config, database, log, port });
} catch (error) {
  // The start's work on the database (indexes, repairs after a crash) is made of steps of one deadline each: one that
  // fails leaves nothing half-done, and the next start does it again.
  const reason = `the start-up work on the database did not finish (${(error as Error)?.message}); start again once the database answers`;
  await refuse(new Error(reason), 2);
  throw error; // unreachable: refuse exits
}

if (service.generatedAdminKey) {
  // Shown once, on the terminal only: it is stored as a hash and never logged.
  process.stderr.write(
    `\nGenerated the first admin key. Save it now, it is not shown again:\n\n  PLATFORM_ADMIN_KEY=${service.generatedAdminKey}\n\n`,
  );
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
if (!stopping) log.info({ port: service.port }, "serving gRPC, gRPC-Web, Connect and /v1 JSON");
