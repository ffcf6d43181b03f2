import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { loadConfig } from "../../../src/config.js";
import { runCommand } from "../../../src/db/process.js";

const execFileAsync = promisify(execFile);

/** A command of a Go module, pinned, e.g. grpcurl or a protoc plugin. */
export interface GoTool {
  module: string;
  version: string;
}

/** Why no Go tool can be built on this machine (no `go`), or undefined when one can. */
export async function goUnavailable(): Promise<string | undefined> {
  try {
    await execFileAsync("go", ["version"]);
    return undefined;
  } catch {
    return "`go` is not on PATH";
  }
}

/**
 * The path of a Go tool's binary, built with `go install` from the Go module
 * proxy into the project's cache folder the first time, logging progress.
 */
export async function ensureGoTool({ module, version }: GoTool): Promise<string> {
  const name = path.basename(module);
  const dir = path.join(loadConfig().buildCacheDir, `${name}-${version}`);
  const binary = path.join(dir, name);
  if (existsSync(binary)) return binary;

  const log = (line: string) => process.stderr.write(`[${name} build] ${line}\n`);
  log(`building ${module}@${version} into ${dir}, once`);
  // Install into a folder of this process's own and rename, so a concurrent test never runs a half-written file.
  const work = path.join(dir, `build-${process.pid}`);
  await mkdir(work, { recursive: true });
  try {
    await runCommand("go", ["install", `${module}@${version}`], {
      env: { ...process.env, GOBIN: work, CGO_ENABLED: "0", GOFLAGS: "-mod=mod" },
      onLine: log,
    });
    await rename(path.join(work, name), binary);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  log("built");
  return binary;
}
