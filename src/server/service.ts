import { systemClock, type Clock } from "../clock.js";
import type { Config } from "../config.js";
import type { Database } from "../db/database.js";
import type { Logger } from "../log.js";
import type { WriteContention } from "../players/players.js";
import { INGEST_LIMITS } from "../events/queue/backpressure.js";
import { requiredScope } from "./calls/auth.js";
import { createCapabilities } from "./calls/capabilities.js";
import { bindPort, CLOSE_GRACE_MS, listen, type BoundPort, type Listener } from "./http/listener.js";
import { Metrics } from "./calls/metrics.js";
import { createRequestHandler } from "./http/request-handler.js";
import { SERVICES } from "./routes.js";

export interface ServiceOptions {
  config: Config;
  database: Database;
  log: Logger;
  /** The clock every capability reads; tests inject one. */
  clock?: Clock;
  /** The port, bound already (`npm start` binds it before anything else starts); else config.port is bound here. */
  port?: BoundPort;
}

export interface RunningService extends Listener {
  /** The admin key generated at this start (first start without PLATFORM_ADMIN_KEY), to be shown once. */
  generatedAdminKey: string | undefined;
}

/**
 * Creates indexes, completes what a crash left of the players' rounds, wires every capability into one router, serves
 * it on config.port and starts the apply worker: the instance is ready as it answers.
 */
export async function startService({
  config,
  database,
  log,
  clock = systemClock,
  port,
}: ServiceOptions): Promise<RunningService> {
  // A method without a declared scope stops the start: nothing becomes public by omission.
  for (const service of SERVICES) service.methods.forEach(requiredScope);
  const metrics = new Metrics();
  const capabilities = await createCapabilities({ config, database, log, clock, steps: metrics });
  const { worker, lag } = capabilities.events;
  metrics.gauge(
    "platform_event_lag_seconds",
    "Age of the oldest accepted event not yet applied.",
    async () => (await lag.measure()).seconds,
  );
  metrics.gauge(
    "platform_event_queue_depth",
    "Events accepted and not yet applied.",
    async () => (await lag.measure()).depth,
  );
  const { backpressure } = capabilities.events;
  metrics.labelledGauge(
    "platform_event_ingest_refused",
    "1 while POST /v1/events answers 429 for the limit: lag (EVENT_MAX_LAG_SECONDS), queue_size (EVENT_MAX_QUEUE_EVENTS).",
    "limit",
    INGEST_LIMITS,
    async () => {
      const reached = backpressure.limitsReached(await lag.measure());
      return Object.fromEntries(INGEST_LIMITS.map((limit) => [limit, reached.includes(limit) ? 1 : 0]));
    },
  );
  metrics.gauge(
    "platform_event_parked_segments",
    "Event segments parked after failing EVENT_PARK_AFTER_FAILURES times in a row (listed by /readyz and the admin call).",
    async () => (await capabilities.events.parked.list()).length,
  );
  metrics.gauge(
    "platform_set_cache_bytes",
    "Bytes of stored sets (chunks of players' sets, activity and columns) the instance keeps of what it read (CACHE_MB).",
    () => capabilities.sets.cache.bytes,
  );
  const stopDatabaseMetrics = metrics.monitorDatabase(database.client);
  countPlayerWriteContention(metrics, capabilities.players.contention);
  metrics.gauge(
    "platform_player_completions_running",
    "Players rounds and erasures that failed at or after their commit point, being completed in the background.",
    () => capabilities.players.completionsRunning,
  );
  const closing = new AbortController();
  const handler = createRequestHandler({
    config,
    database,
    log,
    clock,
    capabilities,
    metrics,
    closing: closing.signal,
  });
  const listener = listen(handler, port ?? (await bindPort(config.port, config.host)), {
    headersTimeoutMs: config.serverHeadersTimeoutSeconds * 1000,
    requestTimeoutMs: config.serverRequestTimeoutSeconds * 1000,
    idleTimeoutMs: config.serverIdleTimeoutSeconds * 1000,
    maxConnections: config.serverMaxConnections,
  });
  // Nothing is filled before the instance serves: every read reads the sets it needs, and keeps them.
  if (config.eventWorker) worker.start();
  return {
    port: listener.port,
    generatedAdminKey: capabilities.generatedAdminKey,
    // All within `graceMs`: what is not written by then is left as a crash leaves it, to the next start's repairs.
    async close(graceMs = CLOSE_GRACE_MS) {
      const deadline = Date.now() + graceMs;
      capabilities.launch.stop();
      closing.abort();
      // The listener starts closing at once (answers in flight say Connection: close); the worker finishes its step
      // meanwhile within half the grace, so that the players' writes after it have time too.
      await Promise.all([listener.close(graceMs), worker.stop(graceMs / 2)]);
      // No call is left: what the players' rounds completed behind them goes to the database before it closes.
      await capabilities.players.stop(Math.max(0, deadline - Date.now()));
      stopDatabaseMetrics();
    },
  };
}

/** Compare-and-swap races of player writes with other instances: how often the version guard decides. */
function countPlayerWriteContention(metrics: Metrics, contention: Readonly<WriteContention>): void {
  metrics.counter(
    "platform_player_write_conflicts_total",
    "Player write attempts that lost a compare-and-swap race to another writer and were tried again.",
    () => contention.conflicts,
  );
  metrics.counter(
    "platform_player_write_contention_errors_total",
    "Player writes given up after losing every attempt (the call answered aborted).",
    () => contention.exhausted,
  );
}
