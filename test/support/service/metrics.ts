import { waitFor } from "./events.js";
import type { TestService } from "./service.js";

/** The value of each named sample of the service's /metrics (absent: undefined). */
async function metricsOf(svc: TestService, names: readonly string[]): Promise<(number | undefined)[]> {
  const res = await fetch(`${svc.baseUrl}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const text = await res.text();
  return names.map((name) => {
    const match = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
    return match ? Number(match[1]) : undefined;
  });
}

/** The service's compare-and-swap race counters of player writes, read from its /metrics. */
export async function playerWriteContention(svc: TestService): Promise<{ conflicts: number; exhausted: number }> {
  const names = ["platform_player_write_conflicts_total", "platform_player_write_contention_errors_total"];
  const [conflicts, exhausted] = await metricsOf(svc, names);
  if (conflicts === undefined || exhausted === undefined) throw new Error(`/metrics lacks ${names.join(" or ")}`);
  return { conflicts, exhausted };
}

/** Until no players round or erasure that failed is being completed in the background (its /metrics say so). */
export async function completionsDone(svc: TestService): Promise<void> {
  await waitFor(
    () => metricsOf(svc, ["platform_player_completions_running"]),
    ([running]) => running === 0,
  );
}

/** How often the service ran step `step` of request path `path`, whatever its outcome (platform_step_seconds). */
export async function stepRuns(svc: TestService, path: string, step: string): Promise<number> {
  const res = await fetch(`${svc.baseUrl}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const prefix = `platform_step_seconds_count{path="${path}",step="${step}",`;
  const lines = (await res.text()).split("\n").filter((line) => line.startsWith(prefix));
  return lines.reduce((runs, line) => runs + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
}
