import http from "node:http";
import { performance } from "node:perf_hooks";
import readline from "node:readline";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { LaunchTokenService } from "../../gen/platformapi/v1/launch_pb.js";
import { poolOf } from "./verify-config.js";

// The verify benchmark's load generator, in its own process (bench/verify.ts starts it): it issues tokens over
// gRPC like the launcher and verifies them over gRPC (HTTP/2) or /v1-style JSON (HTTP/1.1 keep-alive) like a
// studio backend, against the service or the bare handler. It reads one command a line on stdin (the first is
// the setup) and answers each with one JSON line on stdout.

export interface Launch {
  platformUserId: string;
  installationId: string;
  gameId: number;
  channelId: string;
  buildVersion: string;
}

/** A project's launches and the studio key that verifies them. */
export interface LaunchProject {
  studioKey: string;
  launches: Launch[];
}

export interface LoadSetup {
  /** The base URL of each target. */
  targets: Record<Target, string>;
  platformKey: string;
  /** The project every target but service_config verifies: no config entries, no experiments. */
  plain: LaunchProject;
  /** The project of service_config: config entries and running experiments (verify-config.ts). */
  configured: LaunchProject;
}

/**
 * The service, the bare handler (the baseline), the bare handler that spends after its read, as the service does,
 * and the service verifying launches of a project with config and experiments (its answer carries them).
 */
export type Target = "service" | "bare" | "bare_read_then_spend" | "service_config";
export type Protocol = "json" | "grpc";
/** Whose tokens: the plain project's, or the configured one's. */
export type Pool = "plain" | "configured";

export type LoadCommand =
  | { op: "issue"; pool: Pool; concurrency: number; count: number }
  | { op: "verify"; target: Target; protocol: Protocol; concurrency: number; count: number };

/** One command's calls: wall time, each call's latency, and this process's CPU time. */
export interface LoadRun {
  seconds: number;
  latencies_ms: number[];
  cpu_ms: number;
}

// The JSON path a target answers: the service's /v1 route, or the bare router's Connect path (also plain JSON).
const jsonPath = (target: Target) =>
  target === "service" || target === "service_config"
    ? "/v1/launch_tokens/verify"
    : `/${LaunchTokenService.typeName}/${LaunchTokenService.method.verify.name}`;
const TARGETS: Target[] = ["service", "bare", "bare_read_then_spend", "service_config"];

async function main(): Promise<void> {
  const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const setup = JSON.parse((await lines.next()).value as string) as LoadSetup;
  // Clients close idle connections before the servers' idle timeout (60 s) would, so no call races a closing one.
  const byTarget = <T>(make: (target: Target) => T) =>
    Object.fromEntries(TARGETS.map((target) => [target, make(target)])) as Record<Target, T>;
  const grpc = byTarget((target) =>
    createClient(
      LaunchTokenService,
      createGrpcTransport({ baseUrl: setup.targets[target], idleConnectionTimeoutMs: 20_000 }),
    ),
  );
  const agents = byTarget(() => new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 20_000 }));
  // Issued tokens of each project, in issue order, each verified once; consecutive ones belong to different players.
  const tokens: Record<Pool, string[]> = { plain: [], configured: [] };
  const platform = { headers: { "x-api-key": setup.platformKey } };
  const studioKey = (target: Target) => setup[poolOf(target)].studioKey;

  const verify: Record<Protocol, (target: Target, token: string) => Promise<void>> = {
    grpc: async (target, token) => {
      const answer = await grpc[target].verify({ token }, { headers: { "x-api-key": studioKey(target) } });
      if (!answer.valid) throw new Error(`${target} verify failed: ${answer.error}`);
    },
    json: async (target, token) => {
      const url = new URL(jsonPath(target), setup.targets[target]);
      const answer = await postJson(url, agents[target], studioKey(target), { token });
      if (answer.valid !== true) throw new Error(`${target} verify failed: ${JSON.stringify(answer)}`);
    },
  };

  for (let line = await lines.next(); !line.done; line = await lines.next()) {
    const command = JSON.parse(line.value) as LoadCommand;
    let run: LoadRun;
    if (command.op === "issue") {
      const pool = tokens[command.pool];
      const { launches } = setup[command.pool];
      const first = pool.length;
      pool.length += command.count;
      run = await timeCalls(command.concurrency, command.count, async (i) => {
        const launch = launches[(first + i) % launches.length];
        pool[first + i] = (await grpc.service.issue(launch, platform)).token;
      });
    } else {
      const batch = tokens[poolOf(command.target)].splice(0, command.count);
      if (batch.length < command.count) throw new Error("verify asked for more tokens than were issued");
      run = await timeCalls(command.concurrency, command.count, (i) =>
        verify[command.protocol](command.target, batch[i]),
      );
    }
    process.stdout.write(`${JSON.stringify(run)}\n`);
  }
  Object.values(agents).forEach((agent) => agent.destroy());
  process.exit(0);
}

/** Runs `call(i)` for i in [0, count) with `concurrency` calls in flight. */
async function timeCalls(concurrency: number, count: number, call: (i: number) => Promise<void>): Promise<LoadRun> {
  const latencies: number[] = [];
  let next = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) {
        const i = next++;
        const t = performance.now();
        await call(i);
        latencies.push(Math.round((performance.now() - t) * 1000) / 1000);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  return { seconds, latencies_ms: latencies, cpu_ms: (cpu.user + cpu.system) / 1000 };
}

function postJson(url: URL, agent: http.Agent, apiKey: string, body: unknown): Promise<any> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        agent,
        method: "POST",
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(payload),
          "x-api-key": apiKey,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          if (res.statusCode === 200) resolve(JSON.parse(text));
          else reject(new Error(`${url.pathname}: HTTP ${res.statusCode} ${text}`));
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

await main();
