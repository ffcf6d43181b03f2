import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import type { Profiler } from "node:inspector";
import { freePort } from "../../src/db/process.js";
import { summarise, type ProfileSummary } from "./cpu-profile.js";
import { BENCH_ADMIN_KEY, processCpuMs } from "./support.js";

/** A service instance of `npm run bench -- instances`: `npm start`'s entry point in a process of its own, profiled. */
export interface InstanceProcess {
  baseUrl: string;
  child: ChildProcess;
  /** Its CPU time so far (/proc), in ms. */
  cpuMs(): number;
  /** Marks now as where its profile's summary begins (its start and set-up left out). */
  profileFromNow(): void;
  /** SIGTERM, then its CPU profile (V8's sampler, `node --cpu-prof`) from the mark on, summarised. */
  stop(): Promise<Pick<ProfileSummary, "by_area_percent" | "top_functions_percent">>;
}

/** Starts an instance on `databaseUri`/`dbName` and resolves once its /readyz answers 200. */
export async function startInstance(databaseUri: string, dbName: string): Promise<InstanceProcess> {
  const port = await freePort();
  const profileDir = await mkdtemp(path.join(os.tmpdir(), "bench-instance-"));
  // Node itself with tsx as a loader (not the tsx wrapper), so the profile and the CPU time are the service's.
  const spawnedAt = performance.now();
  let sinceUs = 0;
  const child = spawn(
    process.execPath,
    ["--cpu-prof", "--cpu-prof-dir", profileDir, "--import", "tsx", "src/main.ts"],
    {
      env: {
        ...process.env,
        MONGODB_URI: databaseUri,
        DB_NAME: dbName,
        PORT: String(port),
        HOST: "127.0.0.1",
        PLATFORM_ADMIN_KEY: BENCH_ADMIN_KEY,
        LOG_LEVEL: "warn",
        RATE_LIMIT_PER_SECOND: "0",
        DB_TIMEOUT_MS: "10000",
      },
      stdio: ["ignore", "ignore", "inherit"],
    },
  );
  const exited = once(child, "exit");
  const baseUrl = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 60_000; ;) {
    const status = await fetch(`${baseUrl}/readyz`).then(
      (res) => res.status,
      () => 0,
    );
    if (status === 200) break;
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`instance on port ${port} did not start`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    baseUrl,
    child,
    cpuMs: () => processCpuMs(child.pid) ?? Number.NaN,
    // The profile starts as the process does, a moment after the spawn: the mark errs towards later samples.
    profileFromNow: () => (sinceUs = (performance.now() - spawnedAt) * 1000),
    async stop() {
      child.kill("SIGTERM");
      await exited;
      const [file] = await readdir(profileDir);
      const profile = JSON.parse(await readFile(path.join(profileDir, file), "utf8")) as Profiler.Profile;
      await rm(profileDir, { recursive: true, force: true });
      return summarise(profile, sinceUs);
    },
  };
}
