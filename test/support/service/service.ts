import { randomBytes } from "node:crypto";
import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import type { DestinationStream } from "pino";
import { MongoNetworkTimeoutError } from "mongodb";
import { inject } from "vitest";
import { loadConfig, type Config } from "../../../src/config.js";
import { connectDatabase, type Database } from "../../../src/db/database.js";
import { createLogger, type Logger } from "../../../src/log.js";
import { startService, type RunningService } from "../../../src/server/service.js";

export const ADMIN_KEY = "adm_test_" + "k".repeat(32);

/** A settable clock for tests that move time (token expiry) without sleeping. */
export class TestClock {
  private offsetMs = 0;
  private frozenAtMs: number | undefined;
  readonly now = (): Date => new Date((this.frozenAtMs ?? Date.now()) + this.offsetMs);
  advance(ms: number): void {
    this.offsetMs += ms;
  }
  /** Stops the clock where it is, for a test that must not see time pass (a rate limit's refill on a slow machine). */
  freeze(): void {
    this.frozenAtMs ??= Date.now();
  }
}

export interface TestService {
  baseUrl: string;
  config: Config;
  database: Database;
  service: RunningService;
  clock: TestClock;
  /** POSTs `body` as JSON to a /v1 path with `fetch` over HTTP/1.1; a stream's NDJSON body is its lines' JSON. */
  postJson(path: string, body: unknown, apiKey?: string): Promise<{ status: number; body: any; headers: Headers }>;
  /** The same, for a call that must succeed: its body, or an error naming the path, status and answer. */
  postOk(path: string, body: unknown, apiKey?: string): Promise<any>;
  /** A typed client over gRPC (HTTP/2), Connect (JSON over HTTP/1.1) or gRPC-Web. */
  client<T extends DescService>(service: T, protocol?: "grpc" | "connect" | "grpc-web"): Client<T>;
  /** Creates a project with a unique game id and returns its keys. */
  createProject(name?: string): Promise<{ projectId: string; gameId: number; privateKey: string; publicKey: string }>;
  /** Creates a key of `type` (admin call). */
  createKey(
    type: "private" | "public" | "reader" | "platform" | "admin",
    projectId?: string,
  ): Promise<{ keyId: string; key: string }>;
  stop(): Promise<void>;
}

let nextGameId = Math.floor(Math.random() * 1_000_000) * 100;

export interface TestServiceOptions {
  /** A database server of the test's own (one it stops or kills) instead of the run's shared one. */
  mongodbUri?: string;
  /** Where the service logs (at LOG_LEVEL), for a test that reads its log lines; none by default. */
  logDestination?: DestinationStream;
  /** A clock set before the service starts, for a test whose first signing key must lie in the past. */
  clock?: TestClock;
  /** Called, and awaited, with the database connection before the service starts (a test reading or watching its start). */
  beforeStart?: (database: Database) => unknown;
}

/**
 * Starts the real service on a free port against the run's database server,
 * in a database of its own so test files never see each other's data.
 */
export async function startTestService(
  env: Record<string, string> = {},
  { mongodbUri = inject("mongodbUri"), logDestination, clock = new TestClock(), beforeStart }: TestServiceOptions = {},
): Promise<TestService> {
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    DB_NAME: `test_${randomBytes(6).toString("hex")}`,
    PLATFORM_ADMIN_KEY: ADMIN_KEY,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    ...env,
  });
  const { database, service } = await startOnce(() =>
    connectAndStart(mongodbUri, config, { beforeStart, clock, log: createLogger(config.logLevel, logDestination) }),
  );
  const baseUrl = `http://127.0.0.1:${service.port}`;
  const transports = new Map<string, Transport>();
  const transport = (protocol: "grpc" | "connect" | "grpc-web"): Transport => {
    let t = transports.get(protocol);
    if (!t) {
      t =
        protocol === "grpc"
          ? createGrpcTransport({ baseUrl })
          : protocol === "connect"
            ? createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false })
            : createGrpcWebTransport({ baseUrl, httpVersion: "1.1" });
      transports.set(protocol, t);
    }
    return t;
  };

  const test: TestService = {
    baseUrl,
    config,
    database,
    service,
    clock,
    async postJson(path, body, apiKey) {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (apiKey !== undefined) headers["x-api-key"] = apiKey;
      const res = await fetch(baseUrl + path, {
        method: "POST",
        headers,
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
      const text = await res.text();
      // A server stream's NDJSON: its lines' JSON, in order.
      const parsed =
        res.headers.get("content-type") === "application/x-ndjson"
          ? text
              .split("\n")
              .slice(0, -1)
              .map((line) => JSON.parse(line))
          : text
            ? JSON.parse(text)
            : undefined;
      return { status: res.status, body: parsed, headers: res.headers };
    },
    async postOk(path, body, apiKey) {
      const res = await test.postJson(path, body, apiKey);
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    },
    client(service, protocol = "grpc") {
      return createClient(service, transport(protocol));
    },
    async createProject(name = "Test Game") {
      const gameId = ++nextGameId;
      const res = await test.postJson("/v1/admin/projects", { name, game_id: gameId }, ADMIN_KEY);
      if (res.status !== 200) throw new Error(`createProject: ${res.status} ${JSON.stringify(res.body)}`);
      return {
        projectId: res.body.project.project_id,
        gameId,
        privateKey: res.body.private_key,
        publicKey: res.body.public_key,
      };
    },
    async createKey(type, projectId) {
      const res = await test.postJson("/v1/admin/api_keys", { type, project_id: projectId }, ADMIN_KEY);
      if (res.status !== 200) throw new Error(`createKey: ${res.status} ${JSON.stringify(res.body)}`);
      return { keyId: res.body.key_id, key: res.body.key };
    },
    async stop() {
      await service.close(1_000);
      await database.db.dropDatabase();
      await database.close();
    },
  };
  return test;
}

async function connectAndStart(
  mongodbUri: string,
  config: Config,
  options: { beforeStart?: (database: Database) => unknown; clock: TestClock; log: Logger },
): Promise<{ database: Database; service: RunningService }> {
  const database = await connectDatabase(mongodbUri, config.dbName, { timeoutMs: config.dbTimeoutMs });
  try {
    await options.beforeStart?.(database);
    return { database, service: await startService({ config, database, log: options.log, clock: options.clock }) };
  } catch (error) {
    await database.close();
    throw error;
  }
}

/**
 * The start, once more if the shared test engine let its first connection time out: a suite loading it heavily can
 * stall it past a test service's 2 s deadline for a moment, which is no failure of the suite starting.
 */
async function startOnce<T>(start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    if (!(error instanceof MongoNetworkTimeoutError)) throw error;
    return start();
  }
}
