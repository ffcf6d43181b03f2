import os from "node:os";
import path from "node:path";

/** Which embedded database to start when MONGODB_URI is not set. */
export type EmbeddedDbKind = "auto" | "mongod" | "ferretdb";

/** Everything the service reads from its environment, read and validated once. */
export interface Config {
  /** TCP port for all four protocols. */
  port: number;
  /** Interface to listen on. */
  host: string;
  /** A MongoDB server to use instead of the embedded one. */
  mongodbUri: string | undefined;
  /** Database name on that server. */
  dbName: string;
  /** Where the embedded database keeps its files. */
  dataDir: string;
  embeddedDb: EmbeddedDbKind;
  /** A `mongod` binary to prefer over PATH for the embedded database. */
  mongodBinary: string | undefined;
  /** Where the FerretDB binary built on first start is kept (`$XDG_CACHE_HOME/platform-backend`). */
  buildCacheDir: string;
  /** Deadline of one database operation; past it the call answers `unavailable`. */
  dbTimeoutMs: number;
  /** Deadline of the /readyz database check. */
  readyTimeoutMs: number;
  /** How long an instance's claim on a FerretDB database lasts unless renewed. */
  dbLeaseSeconds: number;
  /** Bootstrap admin key; generated and printed once when unset. */
  adminKey: string | undefined;
  /** Lifetime of a launch token. */
  launchTokenTtlSeconds: number;
  /** How often launch follow-ups owed after a failure are completed (and expired tokens swept on FerretDB). */
  launchSweepSeconds: number;
  /** `iss` claim of launch tokens. */
  tokenIssuer: string;
  logLevel: string;
  /** Sustained requests a second per API key (0: no limit). */
  rateLimitPerSecond: number;
  /** Requests a key may make at once after being idle. */
  rateLimitBurst: number;
  /** How long an API key lookup is reused (0: every request reads the key); a revocation elsewhere takes this long. */
  apiKeyCacheSeconds: number;
  /** Failed authentications a minute per client address, refused with 429 beyond the burst (0: no limit). */
  authFailuresPerMinute: number;
  /** Failed authentications a client address may make at once. */
  authFailuresBurst: number;
  /** players/export and players/data streams one API key may have open at once; past it a newcomer answers 429. */
  streamsPerKey: number;
  /** players/export and players/data streams one project may have open at once, whatever its keys. */
  streamsPerProject: number;
  /** A connection must send a request's headers (HTTP/2: open its first stream) this long after connecting. */
  serverHeadersTimeoutSeconds: number;
  /** A request's headers and body must have arrived this long after its first byte (HTTP/2: its stream opened). */
  serverRequestTimeoutSeconds: number;
  /** A connection with no request in flight is closed after this long. */
  serverIdleTimeoutSeconds: number;
  /** Concurrent client connections; at the cap a newcomer evicts the longest-idle one. */
  serverMaxConnections: number;
  /** Raw events and activity older than this many days are deleted by the service. */
  eventRetentionDays: number;
  /** Distinct event names a project may use; an event with a new name past it is rejected (`name_limit`). */
  eventNameLimit: number;
  /** Past this lag of the event queue, POST /v1/events answers 429 with Retry-After and accepts nothing. */
  eventMaxLagSeconds: number;
  /** With this many events accepted and not yet applied, POST /v1/events answers 429 with Retry-After and accepts nothing. */
  eventMaxQueueEvents: number;
  /** Failures in a row after which an event segment is parked (set aside with its error; its project goes on). */
  eventParkAfterFailures: number;
  /** Raw events a step of a sum's back-fill reads before it ends with the day it is in (a step fits DB_TIMEOUT_MS). */
  eventSumBackfillStep: number;
  /** How long an `event_id` counts an event once (a repeat within it counts nothing), in days. */
  eventIdWindowDays: number;
  /** Whether this process runs the events apply worker ("off": ingest and charts only). */
  eventWorker: boolean;
  /** What an instance keeps of what it read and wrote (the stored sets; on the sole writer, profiles too), in MiB. */
  cacheMb: number;
  /** Browser origins (`https://studio.example.com`) answered with CORS headers on /v1 and the RPC paths. */
  corsOrigins: string[];
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join("; ")}`);
    this.name = "ConfigError";
  }
}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** Reads the configuration from `env` (process.env by default); throws ConfigError listing every problem. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be an integer from ${min} to ${max}`);
      return fallback;
    }
    return value;
  };
  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    if (!allowed.includes(raw as T)) {
      problems.push(`${name} must be one of ${allowed.join(", ")}`);
      return fallback;
    }
    return raw as T;
  };
  const text = (name: string): string | undefined => (env[name] === "" ? undefined : env[name]);

  const adminKey = text("PLATFORM_ADMIN_KEY");
  if (adminKey !== undefined && adminKey.length < 24) {
    problems.push("PLATFORM_ADMIN_KEY must be at least 24 characters");
  }
  const corsOrigins = (text("CORS_ORIGINS") ?? "")
    .split(",")
    .map((origin) => origin.trim())
    .filter((origin) => origin !== "");
  for (const origin of corsOrigins) {
    if (!isOrigin(origin)) problems.push(`CORS_ORIGINS: ${origin} is not an origin (scheme://host[:port], no path)`);
  }
  const rateLimitPerSecond = integer("RATE_LIMIT_PER_SECOND", 1000, 0, 1_000_000);
  const config: Config = {
    port: integer("PORT", 8080, 0, 65535),
    host: text("HOST") ?? "0.0.0.0",
    mongodbUri: text("MONGODB_URI"),
    dbName: text("DB_NAME") ?? "platform",
    dataDir: path.resolve(text("DATA_DIR") ?? ".data"),
    embeddedDb: oneOf("EMBEDDED_DB", ["auto", "mongod", "ferretdb"] as const, "auto"),
    mongodBinary: text("MONGOD_BINARY"),
    buildCacheDir: path.join(text("XDG_CACHE_HOME") ?? path.join(os.homedir(), ".cache"), "platform-backend"),
    dbTimeoutMs: integer("DB_TIMEOUT_MS", 2000, 100, 60_000),
    readyTimeoutMs: integer("READY_TIMEOUT_MS", 1000, 50, 60_000),
    dbLeaseSeconds: integer("DB_LEASE_SECONDS", 15, 3, 600),
    adminKey,
    launchTokenTtlSeconds: integer("LAUNCH_TOKEN_TTL_SECONDS", 60, 1, 3600),
    launchSweepSeconds: integer("LAUNCH_SWEEP_SECONDS", 60, 1, 3600),
    tokenIssuer: text("TOKEN_ISSUER") ?? "platform",
    logLevel: oneOf("LOG_LEVEL", LOG_LEVELS, "info"),
    rateLimitPerSecond,
    rateLimitBurst: integer("RATE_LIMIT_BURST", 2 * rateLimitPerSecond, 1, 2_000_000),
    apiKeyCacheSeconds: integer("API_KEY_CACHE_SECONDS", 5, 0, 300),
    authFailuresPerMinute: integer("AUTH_FAILURES_PER_MINUTE", 60, 0, 1_000_000),
    authFailuresBurst: integer("AUTH_FAILURES_BURST", 20, 1, 1_000_000),
    streamsPerKey: integer("STREAMS_PER_KEY", 4, 1, 10_000),
    streamsPerProject: integer("STREAMS_PER_PROJECT", 8, 1, 10_000),
    serverHeadersTimeoutSeconds: integer("SERVER_HEADERS_TIMEOUT_SECONDS", 10, 1, 3600),
    serverRequestTimeoutSeconds: integer("SERVER_REQUEST_TIMEOUT_SECONDS", 30, 1, 3600),
    serverIdleTimeoutSeconds: integer("SERVER_IDLE_TIMEOUT_SECONDS", 60, 1, 3600),
    serverMaxConnections: integer("SERVER_MAX_CONNECTIONS", 10_000, 1, 1_000_000),
    eventRetentionDays: integer("EVENT_RETENTION_DAYS", 400, 1, 3650),
    eventNameLimit: integer("EVENT_NAME_LIMIT", 1000, 1, 100_000),
    eventMaxLagSeconds: integer("EVENT_MAX_LAG_SECONDS", 300, 1, 86_400),
    eventMaxQueueEvents: integer("EVENT_MAX_QUEUE_EVENTS", 1_000_000, 1, 1_000_000_000),
    eventParkAfterFailures: integer("EVENT_PARK_AFTER_FAILURES", 5, 1, 1_000),
    eventSumBackfillStep: integer("EVENT_SUM_BACKFILL_STEP", 50_000, 1, 1_000_000),
    eventIdWindowDays: integer("EVENT_ID_WINDOW_DAYS", 30, 1, 3650),
    eventWorker: oneOf("EVENT_WORKER", ["on", "off"] as const, "on") === "on",
    cacheMb: integer("CACHE_MB", 1024, 0, 1_048_576),
    corsOrigins,
  };
  if (config.serverHeadersTimeoutSeconds > config.serverRequestTimeoutSeconds) {
    problems.push("SERVER_HEADERS_TIMEOUT_SECONDS must not exceed SERVER_REQUEST_TIMEOUT_SECONDS");
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** Whether `value` is exactly an origin as a browser sends it in the Origin header. */
function isOrigin(value: string): boolean {
  try {
    return new URL(value).origin === value;
  } catch {
    return false;
  }
}
