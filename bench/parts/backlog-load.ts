/**
 * The backlog bench's load generator (bench/backlog.ts), a process of its own so that its CPU is not the service's:
 * while the busy project's queue holds its backlog, its public key's tag changes (100 a call, 8 in flight) beside its
 * private key's writes (one call at a time), and one-tag trends and active players read in turn from the busy and the
 * idle project, until the tag changes are done. Prints one JSON line.
 */
import { performance } from "node:perf_hooks";
import { round } from "./support.js";

interface Task {
  baseUrl: string;
  busy: { publicKey: string; privateKey: string };
  idle: { privateKey: string };
  /** Players `player_0` … of the busy project whose tag is toggled, in order; `holders`: those that have it. */
  players: number;
  holders: number[];
  tag: string;
  /** The reads, each made of both projects in turn: a path and a body. */
  reads: Record<string, { path: string; body: object }>;
}

const ENTRIES_PER_CALL = 100;
const task = JSON.parse(process.argv[2]) as Task;

/** A call's status, time and, when refused, its answer. */
async function call(path: string, key: string, body: unknown) {
  const at = performance.now();
  const res = await fetch(task.baseUrl + path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, ms: performance.now() - at, text };
}

/** Calls by status, the first refusal's answer, and the latencies' p50 and p99. */
function tally() {
  const statuses: Record<string, number> = {};
  const latencies: number[] = [];
  let firstRefusal: string | undefined;
  return {
    add({ status, ms, text }: Awaited<ReturnType<typeof call>>) {
      statuses[status] = (statuses[status] ?? 0) + 1;
      latencies.push(ms);
      if (status !== 200) firstRefusal ??= `${status} ${text.slice(0, 300)}`;
    },
    result() {
      latencies.sort((a, b) => a - b);
      const at = (q: number) => round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]);
      return {
        calls: latencies.length,
        statuses,
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        ...(firstRefusal && { first_refusal: firstRefusal }),
      };
    },
  };
}

const holders = new Set(task.holders);
const tagChanges = tally();
const privateWrites = tally();
const reads = new Map<string, ReturnType<typeof tally>>();
let changing = true;
const started = performance.now();

const changes = (async () => {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < task.players) {
        const from = next;
        next += ENTRIES_PER_CALL;
        const players = Array.from({ length: Math.min(ENTRIES_PER_CALL, task.players - from) }, (_, k) => {
          const i = from + k;
          const change = holders.has(i) ? { tags_remove: [task.tag] } : { tags_add: [task.tag] };
          return { partner_user_id: `player_${i}`, ...change };
        });
        tagChanges.add(await call("/v1/players/update", task.busy.publicKey, { players }));
      }
    }),
  );
  changing = false;
})();

const writes = (async () => {
  for (let round = 0; changing; round++) {
    const players = Array.from({ length: ENTRIES_PER_CALL }, (_, k) => ({
      partner_user_id: `player_${(round * ENTRIES_PER_CALL + k) % task.players}`,
      traits: { backlog_round: round },
    }));
    privateWrites.add(await call("/v1/players/update", task.busy.privateKey, { players }));
  }
})();

const reading = (async () => {
  while (changing) {
    for (const [label, { path, body }] of Object.entries(task.reads)) {
      for (const [project, key] of [
        ["busy", task.busy.privateKey],
        ["idle", task.idle.privateKey],
      ]) {
        const name = `${label} ${project}`;
        (reads.get(name) ?? reads.set(name, tally()).get(name)!).add(await call(path, key, body));
      }
    }
  }
})();

await Promise.all([changes, writes, reading]);
const readFigures = Object.fromEntries([...reads].map(([name, figures]) => [name, figures.result()]));
process.stdout.write(
  `${JSON.stringify({
    seconds: round((performance.now() - started) / 1000),
    tag_changes: tagChanges.result(),
    private_writes: privateWrites.result(),
    reads: readFigures,
  })}\n`,
);
