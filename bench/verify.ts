import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import type { JWK } from "jose";
import { MongoClient } from "mongodb";
import { LaunchStore } from "../src/launch/store.js";
import type { Listener } from "../src/server/http/listener.js";
import { profileStretch } from "./parts/cpu-profile.js";
import { processCpuMs, round, startBenchService, type BenchService } from "./parts/support.js";
import { startBareVerify } from "./parts/verify-bare.js";
import {
  configCost,
  figures,
  printTable,
  totalCpuMs,
  type Figures,
  type Measured,
  type VerifyFigures,
} from "./parts/verify-figures.js";
import { configure, CONFIGURED, poolOf } from "./parts/verify-config.js";
import type { LoadCommand, LoadRun, LoadSetup, Protocol, Target } from "./parts/verify-load.js";

// Verify at concurrency 1, 8 and 32, over /v1 JSON (HTTP/1.1 keep-alive) and gRPC (HTTP/2), against the service
// and against the bare handler of verify-bare.ts (the issue's baseline), driven by verify-load.ts in its own
// process. Both run in this process on the same database; their calls alternate in rounds, so a change in the
// machine's load hits both alike. The service also verifies launches of a project with config and experiments
// (verify-config.ts: service_config), beside the same verifies of a project without (service).

const CONCURRENCIES = [1, 8, 32];
/** Verifies per target and protocol at each concurrency, split over ROUNDS rounds. */
const CALLS: Record<number, number> = { 1: 300, 8: 600, 32: 900 };
const ROUNDS = 3;
const PROTOCOLS: Protocol[] = ["json", "grpc"];
/** The targets measured at a concurrency: the diagnostic third one only at 32, the target's concurrency. */
const targetsAt = (concurrency: number): Target[] =>
  concurrency === 32
    ? ["service", "bare", "bare_read_then_spend", "service_config"]
    : ["service", "bare", "service_config"];
// Launches spread over this many players, as real launches are.
const PLAYERS = 64;
const TARGET_RATIO = 0.9;
/** A verify answering the configured project's config and experiments: node CPU and p99 beside the plain project's. */
const CONFIG_TARGET = { nodeCpuMsAbove: 0.1, p99Ratio: 1.1 };
/** Verifies per target and protocol in the profiled stretch at concurrency 32, after the measured runs. */
const PROFILED_CALLS = 300;

export default async function benchmarkVerify() {
  const loadAverageAtStart = os.loadavg().map((l) => round(l, 2));
  // The sweep is background work, not per verify (its cost grows with the tokens stored, not with the calls):
  // left at its default it lands in one target's round or another; its cost is measured apart, below.
  // Tokens are issued before the verifies they feed: on a loaded machine a round outlasts the default 60 s lifetime.
  // The database deadline is 10 s: the configured project's setup and its first compile read megabytes, which a
  // shared machine's engine may take longer than the default 2 s for.
  const bench = await startBenchService({
    LAUNCH_SWEEP_SECONDS: "3600",
    LAUNCH_TOKEN_TTL_SECONDS: "900",
    DB_TIMEOUT_MS: "10000",
  });
  // The bare handlers' own driver client: the service's times every command for its metrics (monitorCommands).
  const bareClient = new MongoClient(bench.databaseUri, { retryReads: false, retryWrites: false });
  const listeners: Listener[] = [];
  let load: LoadProcess | undefined;
  try {
    const launch = await setUp(bench);
    await bareClient.connect();
    const startBare = async (spendAfterRead: boolean) => {
      const db = bareClient.db(bench.config.dbName);
      const listener = await startBareVerify({ config: bench.config, db, jwk: launch.jwk, spendAfterRead });
      listeners.push(listener);
      return `http://127.0.0.1:${listener.port}`;
    };
    const targets = {
      service: bench.baseUrl,
      bare: await startBare(false),
      bare_read_then_spend: await startBare(true),
      service_config: bench.baseUrl,
    };
    load = startLoadGenerator({ ...launch.load, targets });
    const measured = (command: LoadCommand) => measure(bench, load!, command);
    const allTargets = targetsAt(32);
    /** Tokens for `calls` verifies of each of `targets` over each protocol: the plain project's, the configured one's. */
    const issues = (targets: Target[], calls: number, concurrency: number) =>
      (["plain", "configured"] as const).map((pool) => ({
        op: "issue" as const,
        pool,
        concurrency,
        count: targets.filter((target) => poolOf(target) === pool).length * PROTOCOLS.length * calls,
      }));

    // Warm-up: every player's first launch (its follow-up, and in the configured project its first exposures) goes
    // to the service here, so the measured service verifies are all repeat launches; every target and protocol gets
    // JIT-warm.
    for (const command of issues(allTargets, PLAYERS, 8)) await load.ask(command);
    for (const target of allTargets) {
      for (const protocol of PROTOCOLS) {
        await load.ask({ op: "verify", target, protocol, concurrency: 8, count: PLAYERS });
      }
    }

    const issue: Record<string, Figures> = {};
    const verify: Record<string, Record<string, VerifyFigures>> = { json: {}, grpc: {} };
    for (const concurrency of CONCURRENCIES) {
      const calls = CALLS[concurrency];
      const targetsHere = targetsAt(concurrency);
      const [plain, configured] = issues(targetsHere, calls, concurrency);
      issue[`c${concurrency}`] = figures([await measured(plain)]);
      await load.ask(configured);
      for (const protocol of PROTOCOLS) {
        const runs: Partial<Record<Target, Measured[]>> = {};
        // Round r starts with target r: each target goes first, in the middle and last once.
        for (let r = 0; r < ROUNDS; r++) {
          for (const target of [...targetsHere.slice(r % targetsHere.length), ...targetsHere].slice(
            0,
            targetsHere.length,
          )) {
            const run = await measured({ op: "verify", target, protocol, concurrency, count: calls / ROUNDS });
            (runs[target] ??= []).push(run);
          }
        }
        const byTarget = Object.fromEntries(Object.entries(runs).map(([t, r]) => [t, figures(r)]));
        verify[protocol][`c${concurrency}`] = {
          ...byTarget,
          service_to_bare: round(byTarget.service.ops_per_sec / byTarget.bare.ops_per_sec, 3),
          cpu_bare_to_service: round(totalCpuMs(byTarget.bare) / totalCpuMs(byTarget.service), 3),
          ...configCost(byTarget.service, byTarget.service_config),
        };
      }
    }

    // Where this process's CPU goes at concurrency 32: a profile of each target and protocol.
    for (const command of issues(allTargets, PROFILED_CALLS, 32)) await load.ask(command);
    const profiles: Record<string, unknown> = {};
    for (const protocol of PROTOCOLS) {
      for (const target of allTargets) {
        profiles[`${target}_${protocol}`] = await profileStretch({
          file: path.join(os.tmpdir(), `bench-verify-${target}-${protocol}.cpuprofile`),
          calls: PROFILED_CALLS,
          stretch: () => load!.ask({ op: "verify", target, protocol, concurrency: 32, count: PROFILED_CALLS }),
        });
      }
    }

    const sweepScan = await timeSweepScan(bench);
    const loadAverageAtEnd = os.loadavg().map((l) => round(l, 2));
    const ratiosAt32 = Object.fromEntries(PROTOCOLS.map((p) => [p, verify[p].c32.service_to_bare]));
    // The service's own figures beside its rates: the node process's and the engine's CPU per verify.
    const serviceFigures = Object.fromEntries(
      PROTOCOLS.map((p) => [
        p,
        Object.fromEntries(
          CONCURRENCIES.map((c) => {
            const { ops_per_sec, p50_ms, cpu_ms_per_call } = verify[p][`c${c}`].service!;
            return [
              `c${c}`,
              {
                verifies_per_sec: ops_per_sec,
                p50_ms,
                node_cpu_ms_per_verify: cpu_ms_per_call.service_process,
                engine_cpu_ms_per_verify: cpu_ms_per_call.database,
              },
            ];
          }),
        ),
      ]),
    );
    printTable({
      concurrencies: CONCURRENCIES,
      protocols: PROTOCOLS,
      targets: allTargets,
      targetRatio: TARGET_RATIO,
      verify,
      issue,
      loadAverageAtStart,
      loadAverageAtEnd,
    });
    return {
      database: bench.database.isFerretDb ? "ferretdb" : "mongodb",
      load_average: { start: loadAverageAtStart, end: loadAverageAtEnd, cores: os.cpus().length },
      calls_per_target_and_protocol: CALLS,
      service: serviceFigures,
      verify,
      issue_grpc: issue,
      target: {
        service_to_bare_at_c32_at_least: TARGET_RATIO,
        ratios: ratiosAt32,
        met: Object.values(ratiosAt32).every((r) => r >= TARGET_RATIO),
      },
      config: {
        project: CONFIGURED,
        compile: launch.compile,
        target: { node_cpu_ms_above_at_most: CONFIG_TARGET.nodeCpuMsAbove, p99_ratio_at_most: CONFIG_TARGET.p99Ratio },
        met: PROTOCOLS.flatMap((p) => CONCURRENCIES.map((c) => verify[p][`c${c}`])).map(
          (f) =>
            f.config_node_cpu_ms_above! <= CONFIG_TARGET.nodeCpuMsAbove &&
            f.config_p99_ratio! <= CONFIG_TARGET.p99Ratio,
        ),
      },
      profile_c32: profiles,
      sweep_scan: sweepScan,
    };
  } finally {
    load?.close();
    for (const listener of listeners) await listener.close(1_000);
    await bareClient.close();
    await bench.stop();
  }
}

/** Runs one command in the load generator, with this process's and the database's CPU time around it. */
async function measure(bench: BenchService, load: LoadProcess, command: LoadCommand): Promise<Measured> {
  const databaseBefore = processCpuMs(bench.databasePid());
  const cpuBefore = process.cpuUsage();
  const run = await load.ask(command);
  const cpu = process.cpuUsage(cpuBefore);
  const databaseAfter = processCpuMs(bench.databasePid());
  return {
    count: command.count,
    run,
    serviceCpuMs: (cpu.user + cpu.system) / 1000,
    databaseCpuMs: databaseBefore === null || databaseAfter === null ? null : databaseAfter - databaseBefore,
  };
}

/** One pass of the sweep's deletion of expired tokens (a scan of both token collections on FerretDB). */
async function timeSweepScan(bench: BenchService) {
  const documents = await bench.database.db.collection("launch_tokens").estimatedDocumentCount();
  const started = performance.now();
  await new LaunchStore(bench.database.db).deleteExpiredTokens(new Date());
  return { token_documents: documents, ms: round(performance.now() - started) };
}

interface LoadProcess {
  ask(command: LoadCommand): Promise<LoadRun>;
  close(): void;
}

function startLoadGenerator(setup: LoadSetup): LoadProcess {
  const script = fileURLToPath(new URL("./parts/verify-load.ts", import.meta.url));
  const child = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["pipe", "pipe", "inherit"] });
  const answers = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code) => reject(new Error(`the load generator exited (code ${code})`))),
  );
  exited.catch(() => undefined);
  // The setup, keys included, goes over stdin rather than the command line, where `ps` would show it.
  child.stdin.write(`${JSON.stringify(setup)}\n`);
  return {
    async ask(command) {
      child.stdin.write(`${JSON.stringify(command)}\n`);
      const answer = await Promise.race([answers.next(), exited]);
      return JSON.parse(answer.value as string) as LoadRun;
    },
    close: () => child.stdin.end(),
  };
}

async function setUp(bench: BenchService) {
  const platform = await callJson(bench, "/v1/admin/api_keys", { type: "platform" }, bench.adminKey);
  const players = Array.from({ length: PLAYERS }, () => ({
    platformUserId: randomUUID(),
    installationId: randomUUID(),
  }));
  /** A project whose game every player owns. */
  const project = async (name: string) => {
    const gameId = 4_000_000 + Math.floor(Math.random() * 1_000_000);
    const made = await callJson(bench, "/v1/admin/projects", { name, game_id: gameId }, bench.adminKey);
    for (const { platformUserId } of players) {
      await callJson(
        bench,
        "/v1/admin/entitlements",
        { platform_user_id: platformUserId, game_id: gameId, owns: true, source: "STORE" },
        bench.adminKey,
      );
    }
    const launches = players.map((p) => ({ ...p, gameId, channelId: "stable", buildVersion: "1.0" }));
    return { studioKey: made.private_key as string, launches };
  };
  const plain = await project("Bench");
  const configured = await project("Bench config");
  const compile = await configure(
    (path, body, key) => callJson(bench, path, body, key),
    configured.studioKey,
    configured.launches,
  );
  const jwks = await callJson(bench, "/v1/.well-known/jwks.json", undefined, bench.adminKey);
  return { jwk: jwks.keys[0] as JWK, load: { platformKey: platform.key as string, plain, configured }, compile };
}

async function callJson(bench: BenchService, path: string, body: unknown, key: string): Promise<any> {
  const res = await fetch(bench.baseUrl + path, {
    method: body === undefined ? "GET" : "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
  return res.json();
}
