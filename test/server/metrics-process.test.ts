import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { spawnMain, type MainProcess } from "../support/service/main-process.js";

// The service as a process of its own, which spends a second of CPU before its code even loads (a preload burns
// it), so a count that starts when the metrics are created falls a second short of what the OS says.
const BURN_MICROS = 1_000_000;
const BURN = `const start=process.cpuUsage();while(process.cpuUsage(start).user<${BURN_MICROS});`;

let main: MainProcess;
beforeAll(async () => {
  main = await spawnMain({
    MONGODB_URI: inject("mongodbUri"),
    DB_NAME: `test_process_metrics_${process.pid}`,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=data:text/javascript,${encodeURIComponent(BURN)}`,
  });
  await main.serving;
});
afterAll(() => main.stop());

/** What the OS says of a process: its CPU seconds (user, system) and its start, in seconds since the epoch. */
async function osFigures(pid: number): Promise<{ user: number; system: number; startedAt: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  // The fields after the command's closing parenthesis, from field 3 (state) on; see proc(5).
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = 100; // USER_HZ: 100 on every Linux the service runs on (getconf CLK_TCK)
  const bootTime = Number(/^btime (\d+)$/m.exec(await readFile("/proc/stat", "utf8"))![1]);
  return {
    user: Number(fields[11]) / ticks,
    system: Number(fields[12]) / ticks,
    startedAt: bootTime + Number(fields[19]) / ticks,
  };
}

const metric = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]);

describe("process metrics", () => {
  it("count CPU from the process's start, as the OS does, not from the metrics' creation", async () => {
    const pid = main.child.pid!;
    const before = await osFigures(pid);
    const text = await (await fetch(`${main.baseUrl}/metrics`)).text();
    const after = await osFigures(pid);
    const tick = 0.01;
    expect(before.user).toBeGreaterThanOrEqual(BURN_MICROS / 1e6);
    // Between the two readings of the OS; a count from the metrics' creation would be a second short of `before`.
    for (const [name, low, high] of [
      ["process_cpu_user_seconds_total", before.user, after.user],
      ["process_cpu_system_seconds_total", before.system, after.system],
      ["process_cpu_seconds_total", before.user + before.system, after.user + after.system],
    ] as const) {
      expect(metric(text, name), name).toBeGreaterThanOrEqual(low - 2 * tick);
      expect(metric(text, name), name).toBeLessThanOrEqual(high + 2 * tick);
    }
    // prom-client rounds the start to a whole second, and the OS's start is counted in clock ticks from boot.
    expect(Math.abs(metric(text, "process_start_time_seconds") - before.startedAt)).toBeLessThanOrEqual(1.5);
  });
});
