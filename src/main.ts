import { ConfigError, loadConfig } from "./config.js";
import { connectDatabase } from "./db/database.js";
import { startEmbeddedDb, type EmbeddedDb } from "./db/embedded.js";
import { createLogger } from "./log.js";
import { startService } from "./server/service.js";

let config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(2);
}
const log = createLogger(config.logLevel);

let embedded: EmbeddedDb | undefined;
let uri = config.mongodbUri;
if (uri === undefined) {
  embedded = await startEmbeddedDb({
    kind: config.embeddedDb,
    dataDir: config.dataDir,
    mongodBinary: config.mongodBinary,
    log,
  });
  uri = embedded.uri;
}
const database = await connectDatabase(uri, config.dbName);
const service = await startService({ config, database, log });

if (service.generatedAdminKey) {
  // Shown once, on the terminal only: it is stored as a hash and never logged.
  process.stderr.write(
    `\nGenerated the first admin key. Save it now, it is not shown again:\n\n  PLATFORM_ADMIN_KEY=${service.generatedAdminKey}\n\n`,
  );
}
log.info({ port: service.port }, "serving gRPC, gRPC-Web, Connect and /v1 JSON");

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, "shutting down: finishing in-flight requests");
  await service.close();
  await database.close();
  await embedded?.stop();
  log.info("stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
