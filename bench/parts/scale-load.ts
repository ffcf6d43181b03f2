/**
 * The scale bench's stream of events, a process of its own so that its CPU is not the service's: `calls` calls of
 * `batch` events through POST /v1/events, `concurrency` in flight, the players taken in turn, the names in turn, purchases with an amount; every event a minute old. Prints one JSON line.
 */
import { performance } from "node:perf_hooks";
import { partnerIdOf } from "./scale-model.js";

interface StreamTask {
  baseUrl: string;
  key: string;
  /** The model's seed, and the players: `count` of them spread evenly over the first `of` (scale-model.ts). */
  seed: number;
  count: number;
  of: number;
  names: string[];
  calls: number;
  batch: number;
  concurrency: number;
}

const task = JSON.parse(process.argv[2]) as StreamTask;
const players = Array.from({ length: task.count }, (_, k) =>
  partnerIdOf(task.seed, Math.floor((k * task.of) / task.count)),
);
const at = new Date(Date.now() - 60_000).toISOString();
let next = 0;
let accepted = 0;
const started = performance.now();
await Promise.all(
  Array.from({ length: task.concurrency }, async () => {
    for (let call = next++; call < task.calls; call = next++) {
      const events = Array.from({ length: task.batch }, (_, j) => {
        const n = call * task.batch + j;
        const name = task.names[n % task.names.length];
        return {
          name,
          partner_user_id: players[n % players.length],
          timestamp: at,
          ...(name === "purchase" && { properties: { amount: 4.99 } }),
        };
      });
      const res = await fetch(`${task.baseUrl}/v1/events`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": task.key },
        body: JSON.stringify({ events }),
      });
      if (res.status !== 200) throw new Error(`/v1/events: ${res.status} ${await res.text()}`);
      accepted += ((await res.json()) as { accepted: number }).accepted;
    }
  }),
);
const seconds = (performance.now() - started) / 1000;
process.stdout.write(
  `${JSON.stringify({ accepted, calls: task.calls, ingest_seconds: Math.round(seconds * 100) / 100 })}\n`,
);
