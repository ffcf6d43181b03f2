import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { runCommand } from "../../src/db/process.js";

const execFileAsync = promisify(execFile);

/** grpcurl, the gRPC client nobody here wrote, pinned; built from the Go module proxy like FerretDB. */
const GRPCURL_MODULE = "github.com/fullstorydev/grpcurl/cmd/grpcurl";
const GRPCURL_VERSION = "v1.9.3";

/** Why grpcurl cannot be had on this machine (no `go`), or undefined when it can. */
export async function grpcurlUnavailable(): Promise<string | undefined> {
  try {
    await execFileAsync("go", ["version"]);
    return undefined;
  } catch {
    return "`go` is not on PATH, so grpcurl cannot be built";
  }
}

/**
 * The path of the grpcurl binary, built with `go install` into
 * ~/.cache/platform-backend the first time (a minute or so), logging progress.
 */
export async function ensureGrpcurl(): Promise<string> {
  const cacheRoot = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache");
  const dir = path.join(cacheRoot, "platform-backend", `grpcurl-${GRPCURL_VERSION}`);
  const binary = path.join(dir, "grpcurl");
  if (existsSync(binary)) return binary;

  const log = (line: string) => process.stderr.write(`[grpcurl build] ${line}\n`);
  log(`building ${GRPCURL_MODULE}@${GRPCURL_VERSION} into ${dir}, once`);
  // Install into a folder of this process's own and rename, so a concurrent test never runs a half-written file.
  const work = path.join(dir, `build-${process.pid}`);
  await mkdir(work, { recursive: true });
  try {
    await runCommand("go", ["install", `${GRPCURL_MODULE}@${GRPCURL_VERSION}`], {
      env: { ...process.env, GOBIN: work, CGO_ENABLED: "0", GOFLAGS: "-mod=mod" },
      onLine: log,
    });
    await rename(path.join(work, "grpcurl"), binary);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  log("built");
  return binary;
}

export interface GrpcurlResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs `grpcurl -plaintext [flags] address [command]`, e.g. command ["list"] or ["grpc.health.v1.Health/Check"]. */
export async function runGrpcurl(
  binary: string,
  { address, command, flags = [] }: { address: string; command: string[]; flags?: string[] },
): Promise<GrpcurlResult> {
  try {
    const { stdout, stderr } = await execFileAsync(binary, ["-plaintext", ...flags, address, ...command], {
      timeout: 30_000,
    });
    return { exitCode: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout = "", stderr = "" } = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof code !== "number") throw error;
    return { exitCode: code, stdout, stderr };
  }
}
