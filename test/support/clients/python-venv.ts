import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** A venv's python, or why there can be none on this machine. */
export type Python = { python: string } | { skip: string };

function firstLine(error: unknown): string {
  const { stderr, message } = error as { stderr?: string; message: string };
  return (stderr?.trim() || message).split("\n").slice(-1)[0];
}

/**
 * A venv with `packages` (pinned PyPI requirements), made once per machine in
 * the project's cache folder under `name` and a hash of the packages (built
 * aside and renamed, so no run sees a half-made one), or why there can be none.
 */
export async function pythonVenv(name: string, packages: readonly string[]): Promise<Python> {
  try {
    await run("python3", ["--version"]);
  } catch {
    return { skip: "python3 is not installed" };
  }
  const cacheRoot = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache");
  const key = createHash("sha256").update(packages.join(" ")).digest("hex").slice(0, 12);
  const dir = path.join(cacheRoot, "platform-backend", `${name}-${key}`);
  const python = path.join(dir, "bin", "python");
  if (existsSync(python)) return { python };

  const work = `${dir}.build-${process.pid}`;
  await mkdir(path.dirname(dir), { recursive: true });
  await rm(work, { recursive: true, force: true });
  try {
    await run("python3", ["-m", "venv", work]);
  } catch (error) {
    await rm(work, { recursive: true, force: true });
    return { skip: `python3 cannot make a venv (${firstLine(error)})` };
  }
  try {
    const pip = ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", ...packages];
    await run(path.join(work, "bin", "python"), pip, { timeout: 300_000 });
  } catch (error) {
    await rm(work, { recursive: true, force: true });
    return { skip: `pip could not install ${packages.join(" ")} (${firstLine(error)})` };
  }
  // Another run may have finished first; then its venv is as good as ours.
  await rename(work, dir).catch(() => rm(work, { recursive: true, force: true }));
  return { python };
}
