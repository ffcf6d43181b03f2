import os from "node:os";
import type { LoadRun, Protocol, Target } from "./verify-load.js";
import { round } from "./support.js";

// The verify benchmark's figures: what one target did over its rounds, and the table printed from them.

export interface Figures {
  ops_per_sec: number;
  p50_ms: number;
  p99_ms: number;
  /** CPU time per call of this process (service and bare handlers), the database, the load generator. */
  cpu_ms_per_call: { service_process: number; database: number | null; load_generator: number };
}

export type VerifyFigures = Partial<Record<Target, Figures>> & {
  service_to_bare: number;
  /**
   * The bare handler's CPU per call over the service's, all three processes counted: what the throughput ratio
   * comes to when the machine's cores are the bound, less swayed by the other work on a shared machine.
   */
  cpu_bare_to_service: number;
  /** service_config's node CPU per verify less service's: what answering config and experiments adds. */
  config_node_cpu_ms_above?: number;
  /** service_config's p99 over service's. */
  config_p99_ratio?: number;
};

/** CPU time per call of every process taking part: the service's, the database's, the load generator's. */
export const totalCpuMs = (f: Figures) =>
  f.cpu_ms_per_call.service_process + (f.cpu_ms_per_call.database ?? 0) + f.cpu_ms_per_call.load_generator;

export interface Measured {
  count: number;
  run: LoadRun;
  serviceCpuMs: number;
  databaseCpuMs: number | null;
}

/** Throughput, latency percentiles and CPU per call over a target's rounds together. */
export function figures(runs: Measured[]): Figures {
  const count = runs.reduce((sum, m) => sum + m.count, 0);
  const seconds = runs.reduce((sum, m) => sum + m.run.seconds, 0);
  const latencies = runs.flatMap((m) => m.run.latencies_ms).sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  const perCall = (ms: number) => round(ms / count, 3);
  const databaseMs = runs.some((m) => m.databaseCpuMs === null)
    ? null
    : runs.reduce((sum, m) => sum + m.databaseCpuMs!, 0);
  return {
    ops_per_sec: round(count / seconds),
    p50_ms: round(at(0.5), 1),
    p99_ms: round(at(0.99), 1),
    cpu_ms_per_call: {
      service_process: perCall(runs.reduce((sum, m) => sum + m.serviceCpuMs, 0)),
      database: databaseMs === null ? null : perCall(databaseMs),
      load_generator: perCall(runs.reduce((sum, m) => sum + m.run.cpu_ms, 0)),
    },
  };
}

/** What answering the configured project's config and experiments adds to a verify: node CPU, and p99 over the plain one's. */
export function configCost(plain: Figures, configured: Figures) {
  return {
    config_node_cpu_ms_above: round(
      configured.cpu_ms_per_call.service_process - plain.cpu_ms_per_call.service_process,
      3,
    ),
    config_p99_ratio: round(configured.p99_ms / plain.p99_ms, 3),
  };
}

/** The human-readable table, on stderr so that stdout stays one JSON object. */
export function printTable(options: {
  concurrencies: number[];
  protocols: Protocol[];
  targets: Target[];
  targetRatio: number;
  verify: Record<string, Record<string, VerifyFigures>>;
  issue: Record<string, Figures>;
  loadAverageAtStart: number[];
  loadAverageAtEnd: number[];
}): void {
  const { verify, issue, protocols, targets } = options;
  const columns = options.concurrencies.map((c) => `c${c}`);
  const cell = (f: Figures) => `${f.ops_per_sec} (${f.p50_ms}, ${f.p99_ms})`;
  const cpu = (f: Figures) => `${f.cpu_ms_per_call.service_process} / ${f.cpu_ms_per_call.database ?? "?"}`;
  const rows: string[][] = [["", ...columns.map((c) => `${c}: verifies/s (p50, p99 ms)`)]];
  const names: Record<Target, string> = {
    service: "service",
    bare: "bare handler",
    bare_read_then_spend: "bare, spend after the read",
    service_config: "service, project with config",
  };
  for (const protocol of protocols) {
    const name = protocol === "json" ? "JSON" : "gRPC";
    const at = (c: string, target: Target, show: (f: Figures) => string) => {
      const found = verify[protocol][c][target];
      return found ? show(found) : "";
    };
    for (const target of targets) {
      rows.push([`${names[target]}, ${name}`, ...columns.map((c) => at(c, target, cell))]);
    }
    rows.push([`service / bare, ${name}`, ...columns.map((c) => `**${verify[protocol][c].service_to_bare}**`)]);
    rows.push([
      `bare / service CPU per call, ${name}`,
      ...columns.map((c) => `${verify[protocol][c].cpu_bare_to_service}`),
    ]);
    for (const target of targets) {
      rows.push([`CPU ms/verify ${names[target]} (node / engine)`, ...columns.map((c) => at(c, target, cpu))]);
    }
    rows.push([
      `config: node CPU ms/verify added, p99 ratio, ${name}`,
      ...columns.map(
        (c) => `**${verify[protocol][c].config_node_cpu_ms_above}**, ${verify[protocol][c].config_p99_ratio}`,
      ),
    ]);
  }
  rows.push(["issue over gRPC (for reference)", ...columns.map((c) => cell(issue[c]))]);
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  const line = (row: string[]) => `| ${row.map((text, i) => text.padEnd(widths[i])).join(" | ")} |`;
  const table = [line(rows[0]), line(widths.map((w) => "-".repeat(w))), ...rows.slice(1).map(line)];
  process.stderr.write(
    `\n${table.join("\n")}\n\nTarget: service / bare at c32 >= ${options.targetRatio}. Load average (1, 5, 15 min) at start ` +
      `${options.loadAverageAtStart.join(", ")}, at end ${options.loadAverageAtEnd.join(", ")}, on ${os.cpus().length} cores.\n\n`,
  );
}
