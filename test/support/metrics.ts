import type { TestService } from "./service.js";

/** The service's compare-and-swap race counters of player writes, read from its /metrics. */
export async function playerWriteContention(svc: TestService): Promise<{ conflicts: number; exhausted: number }> {
  const res = await fetch(`${svc.baseUrl}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const text = await res.text();
  const value = (name: string) => {
    const match = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
    if (!match) throw new Error(`/metrics has no ${name}`);
    return Number(match[1]);
  };
  return {
    conflicts: value("platform_player_write_conflicts_total"),
    exhausted: value("platform_player_write_contention_errors_total"),
  };
}
