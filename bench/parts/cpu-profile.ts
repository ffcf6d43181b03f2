import { writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import type { Profiler } from "node:inspector";

/** Where a stretch of this process spent its CPU: shares of the sampled self time, by area and by function. */
export interface ProfileSummary {
  calls: number;
  /** The process's CPU time per call over the stretch (process.cpuUsage, not the samples). */
  cpu_ms_per_call: number;
  /** Percent of the samples that were not idle, by package, Node subsystem or project file. */
  by_area_percent: Record<string, number>;
  top_functions_percent: Record<string, number>;
}

const TOP = 12;

/**
 * Samples this process's main thread (V8's CPU profiler, as `node --cpu-prof`) while `stretch` runs, writes the
 * profile to `file` (open it in Chrome DevTools) and sums its self time per call, by area and by function.
 */
export async function profileStretch(options: {
  file: string;
  calls: number;
  stretch: () => Promise<unknown>;
}): Promise<ProfileSummary> {
  const session = new Session();
  session.connect();
  try {
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 200 });
    await session.post("Profiler.start");
    const cpuBefore = process.cpuUsage();
    await options.stretch();
    const cpu = process.cpuUsage(cpuBefore);
    const { profile } = await session.post("Profiler.stop");
    await writeFile(options.file, JSON.stringify(profile));
    const cpuMsPerCall = Math.round((cpu.user + cpu.system) / options.calls) / 1000;
    return { calls: options.calls, cpu_ms_per_call: cpuMsPerCall, ...summarise(profile) };
  } finally {
    session.disconnect();
  }
}

/**
 * A profile's self time by area and by function, in percent of the busy samples (a profile of another process too:
 * `node --cpu-prof` writes the same format). Samples are taken on wall-clock ticks, so on a busy machine their sum
 * overstates CPU time; their shares hold.
 */
export function summarise(
  profile: Profiler.Profile,
  /** Samples taken before this many microseconds into the profile are left out (a process's start). */
  sinceUs = 0,
): Pick<ProfileSummary, "by_area_percent" | "top_functions_percent"> {
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // A sample's time is the gap to the next one.
  let at = 0;
  samples.forEach((id, i) => {
    at += deltas[i] ?? 0;
    if (at >= sinceUs) selfUs.set(id, (selfUs.get(id) ?? 0) + (deltas[i + 1] ?? 0));
  });
  const byArea = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let busyUs = 0;
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    if (us === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const area = areaOf(functionName, url);
    if (area === "(idle)") continue;
    busyUs += us;
    byArea.set(area, (byArea.get(area) ?? 0) + us);
    const name = `${functionName || "(anonymous)"} ${shortUrl(url)}${url ? `:${lineNumber + 1}` : ""}`.trim();
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  }
  const percent = (entries: Map<string, number>) =>
    Object.fromEntries(
      [...entries]
        .sort((a, b) => b[1] - a[1])
        .slice(0, TOP)
        .map(([key, us]) => [key, Math.round((1000 * us) / busyUs) / 10]),
    );
  return { by_area_percent: percent(byArea), top_functions_percent: percent(byFunction) };
}

/** The package, Node subsystem or project file a frame belongs to. */
function areaOf(functionName: string, url: string): string {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native)";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  const internal = /^node:(?:internal\/)?([^/]+)/.exec(url);
  if (internal) return `node:${internal[1].replace(/\.js$/, "")}`;
  const own = /\/(src|bench|gen)\/(.*)$/.exec(url);
  return own ? `${own[1]}/${own[2]}` : url;
}

function shortUrl(url: string): string {
  return url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*?\/(src|bench|gen)\//, "$1/");
}
