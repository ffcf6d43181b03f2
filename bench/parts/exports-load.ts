// The load generator of `npm run bench -- exports`, a process of its own so that its CPU is not the service's. It
// reads its task from argv[2] (JSON), runs `gets` players/get calls one after another while `exports` whole-project
// exports stream (each started again as it ends, until the gets are done), and prints its figures as JSON.
import { performance } from "node:perf_hooks";
import { round } from "./support.js";

interface Task {
  baseUrl: string;
  key: string;
  /** Players `player_0` … of the project, each with a profile. */
  players: number;
  gets: number;
  exports: number;
}

/** Gets before the timed ones: the connection and the service's code warmed up. */
const WARM_UP = 50;

const task = JSON.parse(process.argv[2]) as Task;
const request = (path: string, body: unknown) =>
  fetch(task.baseUrl + path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": task.key },
    body: JSON.stringify(body),
  });

/** One whole export read to its end: its lines, or its status when it was refused (0: the connection failed). */
async function exportOnce(): Promise<{ lines: number; status: number }> {
  try {
    const res = await request("/v1/players/export", {});
    if (res.status !== 200) {
      await res.body?.cancel();
      return { lines: 0, status: res.status };
    }
    let lines = 0;
    for await (const chunk of res.body!) for (const byte of chunk as Uint8Array) if (byte === 10) lines++;
    return { lines, status: res.status };
  } catch {
    return { lines: 0, status: 0 };
  }
}

/** Gets answered with another status than 200, or none ("connection"), by status: each is timed all the same. */
const failedGets: Record<string, number> = {};

async function get(i: number): Promise<number> {
  const started = performance.now();
  const player = `player_${(i * 7919) % task.players}`;
  const res = await request("/v1/players/get", { partner_user_id: player }).catch(() => undefined);
  await res?.text();
  const status = res?.status ?? "connection";
  if (status !== 200) failedGets[status] = (failedGets[status] ?? 0) + 1;
  return performance.now() - started;
}

for (let i = 0; i < WARM_UP; i++) await get(i);
let done = false;
const exported = { completed: 0, profiles: 0, refused: 0, failed: 0 };
const started = performance.now();
const streams = Array.from({ length: task.exports }, async () => {
  while (!done) {
    const { lines, status } = await exportOnce();
    if (status === 0) exported.failed++;
    else if (status !== 200) exported.refused++;
    else if (lines === task.players) exported.completed++;
    exported.profiles += lines;
  }
});
// The streams under way before the first get is timed.
if (task.exports > 0) await new Promise((resolve) => setTimeout(resolve, 1_000));
const latencies: number[] = [];
for (let i = 0; i < task.gets; i++) latencies.push(await get(i));
done = true;
const seconds = (performance.now() - started) / 1000;
await Promise.all(streams);
latencies.sort((a, b) => a - b);
const at = (q: number) => round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))], 2);
process.stdout.write(
  JSON.stringify({
    get: { calls: task.gets, p50_ms: at(0.5), p90_ms: at(0.9), p99_ms: at(0.99), max_ms: at(1), not_200: failedGets },
    exports: {
      ...exported,
      seconds: round(seconds, 1),
      profiles_per_second: Math.round(exported.profiles / seconds),
    },
  }) + "\n",
);
