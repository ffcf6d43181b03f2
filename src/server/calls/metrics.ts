import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { CommandFailedEvent, CommandSucceededEvent, MongoClient } from "mongodb";
import type { NodeHandler } from "../http/node-types.js";
import type { Protocol } from "../http/protocol.js";
import { sendError } from "../http/http-errors.js";
import type { StepTimer } from "../../steps.js";

/** What a verify can answer: valid, or the error of a token that did not verify. */
const VERIFY_RESULTS = ["valid", "expired", "invalid_token", "unknown_token", "already_used"];

/** Database commands counted under their own name; any other is counted as `other`, so the label stays bounded. */
const DB_COMMANDS = new Set([
  "aggregate",
  "buildInfo",
  "bulkWrite",
  "count",
  "create",
  "createIndexes",
  "delete",
  "distinct",
  "drop",
  "dropDatabase",
  "dropIndexes",
  "endSessions",
  "find",
  "findAndModify",
  "getMore",
  "hello",
  "insert",
  "killCursors",
  "listCollections",
  "listIndexes",
  "ping",
  "update",
]);

const RPC_SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const DB_SECONDS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/**
 * Node's process metrics describe the process, not a service, so one registry
 * holds them for every service the process starts (collecting them twice would
 * also start a second event-loop monitor that nothing stops).
 */
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    const before = process.cpuUsage();
    collectDefaultMetrics({ register: processRegistry });
    countCpuFromProcessStart(processRegistry, before);
  }
  return processRegistry;
}

/**
 * prom-client's CPU counters count from their registration; what the process spent before (loading, starting the
 * database, start-up repairs) is added once, so they count from the process's start as the OS does.
 */
function countCpuFromProcessStart(registry: Registry, before: NodeJS.CpuUsage): void {
  const spent = {
    process_cpu_user_seconds_total: before.user,
    process_cpu_system_seconds_total: before.system,
    process_cpu_seconds_total: before.user + before.system,
  };
  for (const [name, micros] of Object.entries(spent)) (registry.getSingleMetric(name) as Counter).inc(micros / 1e6);
}

/**
 * The Prometheus metrics of one running service, in a registry of its own so
 * that two services in one process never share or collide. Label values come
 * only from bounded sets (method names of the descriptors, protocols, codes,
 * verify results, allow-listed command names), never from a request.
 */
export class Metrics implements StepTimer {
  // At start, not at the first scrape: GC durations and the event loop's lag are observed from their registration.
  private readonly processRegistry = processMetrics();
  private readonly registry = new Registry();
  private readonly rpcRequests = new Counter({
    name: "platform_rpc_requests_total",
    help: "RPCs handled, by method, protocol and code (ok or the Connect code name).",
    labelNames: ["method", "protocol", "code"] as const,
    registers: [this.registry],
  });
  private readonly rpcSeconds = new Histogram({
    name: "platform_rpc_duration_seconds",
    help: "Time from a decoded request to its answer, by method and protocol.",
    labelNames: ["method", "protocol"] as const,
    buckets: RPC_SECONDS_BUCKETS,
    registers: [this.registry],
  });
  private readonly verifications = new Counter({
    name: "platform_launch_verifications_total",
    help: "Launch token verifications answered, by result.",
    labelNames: ["result"] as const,
    registers: [this.registry],
  });
  private readonly dbSeconds = new Histogram({
    name: "platform_db_command_duration_seconds",
    help: "Database command round trips, succeeded or failed, by command name.",
    labelNames: ["command"] as const,
    buckets: DB_SECONDS_BUCKETS,
    registers: [this.registry],
  });
  private readonly stepSeconds = new Histogram({
    name: "platform_step_seconds",
    help: "Time of each named step of a request path (src/steps.ts), by path, step and outcome (ok or the error code).",
    labelNames: ["path", "step", "outcome"] as const,
    buckets: DB_SECONDS_BUCKETS,
    registers: [this.registry],
  });
  private readonly dbErrors = new Counter({
    name: "platform_db_command_errors_total",
    help: "Database commands that failed (an error reply or a lost connection), by command name.",
    labelNames: ["command"] as const,
    registers: [this.registry],
  });

  // prom-client's series of each label set, taken once (its `labels()`), so a call hashes no label object.
  private readonly rpcSeries = new Map<string, RpcSeries>();
  private readonly verificationSeries = new Map<string, Counter.Internal>();
  private readonly stepSeries = new Map<string, Histogram.Internal<"path" | "step" | "outcome">>();
  private readonly dbSeries = new Map<string, { seconds: Histogram.Internal<"command">; errors: Counter.Internal }>();

  constructor() {
    for (const result of VERIFY_RESULTS) {
      const series = this.verifications.labels({ result });
      series.inc(0);
      this.verificationSeries.set(result, series);
    }
  }

  recordRpc(rpc: { method: string; protocol: Protocol; code: string; seconds: number }): void {
    const key = `${rpc.method} ${rpc.protocol}`;
    let series = this.rpcSeries.get(key);
    if (!series) {
      series = { seconds: this.rpcSeconds.labels({ method: rpc.method, protocol: rpc.protocol }), byCode: new Map() };
      this.rpcSeries.set(key, series);
    }
    let requests = series.byCode.get(rpc.code);
    if (!requests) {
      requests = this.rpcRequests.labels({ method: rpc.method, protocol: rpc.protocol, code: rpc.code });
      series.byCode.set(rpc.code, requests);
    }
    requests.inc();
    series.seconds.observe(rpc.seconds);
  }

  recordStep({ path, step, outcome, seconds }: Parameters<StepTimer["recordStep"]>[0]): void {
    const key = `${path} ${step} ${outcome}`;
    let series = this.stepSeries.get(key);
    if (!series) {
      series = this.stepSeconds.labels({ path, step, outcome });
      this.stepSeries.set(key, series);
    }
    series.observe(seconds);
  }

  /** Counts a verify answer by its result; an error outside VERIFY_RESULTS (none today) counts as `other`. */
  recordVerification(answer: { valid: boolean; error?: string }): void {
    const result = answer.valid ? "valid" : (answer.error ?? "");
    const series = this.verificationSeries.get(result);
    if (series) series.inc();
    else this.verifications.inc({ result: "other" });
  }

  /**
   * Times every command `client` sends (it must be created with
   * `monitorCommands: true`); returns the function that stops it.
   */
  monitorDatabase(client: MongoClient): () => void {
    const succeeded = (event: CommandSucceededEvent) => {
      this.dbCommand(event.commandName).seconds.observe(event.duration / 1000);
    };
    const failed = (event: CommandFailedEvent) => {
      const series = this.dbCommand(event.commandName);
      series.seconds.observe(event.duration / 1000);
      series.errors.inc();
    };
    client.on("commandSucceeded", succeeded);
    client.on("commandFailed", failed);
    return () => {
      client.off("commandSucceeded", succeeded);
      client.off("commandFailed", failed);
    };
  }

  private dbCommand(commandName: string) {
    const command = commandLabel(commandName);
    let series = this.dbSeries.get(command);
    if (!series) {
      series = { seconds: this.dbSeconds.labels({ command }), errors: this.dbErrors.labels({ command }) };
      this.dbSeries.set(command, series);
    }
    return series;
  }

  /**
   * Adds a gauge read at each scrape (a queue's depth, say). A reading that
   * fails shows as NaN, so the rest of the scrape still answers.
   */
  gauge(name: string, help: string, read: () => number | Promise<number>): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      async collect() {
        try {
          this.set(await read());
        } catch {
          this.set(Number.NaN);
        }
      },
    });
  }

  /** Adds a gauge with one label of a fixed set of `values`, read at each scrape: `read` answers a number for each. */
  labelledGauge(
    name: string,
    help: string,
    label: string,
    values: readonly string[],
    read: () => Promise<Record<string, number>>,
  ): void {
    new Gauge({
      name,
      help,
      labelNames: [label],
      registers: [this.registry],
      async collect() {
        const readings = await read().catch(() => ({}) as Record<string, number>);
        for (const value of values) this.set({ [label]: value }, readings[value] ?? Number.NaN);
      },
    });
  }

  /** Adds a counter whose running total, kept elsewhere, is read at each scrape; `read` must never decrease. */
  counter(name: string, help: string, read: () => number): void {
    new Counter({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  }

  /** The Prometheus text exposition of this service's metrics and the process's. */
  async exposition(): Promise<{ contentType: string; text: string }> {
    const merged = Registry.merge([this.processRegistry, this.registry]);
    return { contentType: merged.contentType, text: await merged.metrics() };
  }
}

/** One method and protocol's duration series and its request counters by code. */
interface RpcSeries {
  seconds: Histogram.Internal<"method" | "protocol">;
  byCode: Map<string, Counter.Internal>;
}

function commandLabel(commandName: string): string {
  return DB_COMMANDS.has(commandName) ? commandName : "other";
}

/** Serves GET /metrics; like /healthz it needs no API key. */
export function metricsHandler(metrics: Metrics): NodeHandler {
  return (req, res) => {
    if (req.method !== "GET") {
      res.setHeader("Allow", "GET");
      sendError(res, 405, "invalid_argument", `/metrics takes GET, not ${req.method}`);
      return;
    }
    metrics
      .exposition()
      .then(({ contentType, text }) => {
        res.statusCode = 200;
        res.setHeader("content-type", contentType);
        res.end(text);
      })
      .catch(() => sendError(res, 500, "internal", "metrics could not be collected"));
  };
}
