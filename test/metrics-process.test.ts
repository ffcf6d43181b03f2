import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "./support/service.js";

// A file of its own: Node's process metrics are registered once a process, by the first service started in it.
let test: TestService;
beforeAll(async () => {
  test = await startTestService();
});
afterAll(() => test.stop());

/** Spends `micros` of CPU time in this process, where the service runs too. */
function burnCpu(micros: number): void {
  const start = process.cpuUsage();
  while (process.cpuUsage(start).user < micros) Math.sqrt(Math.random());
}

describe("process metrics", () => {
  it("count from the start, not from the first scrape", async () => {
    burnCpu(200_000);
    const text = await (await fetch(`${test.baseUrl}/metrics`)).text();
    const cpu = Number(/^process_cpu_user_seconds_total (\S+)$/m.exec(text)?.[1]);
    expect(cpu).toBeGreaterThanOrEqual(0.2);
  });
});
