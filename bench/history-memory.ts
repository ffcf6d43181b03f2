import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { OwnerMemory } from "../src/db/owner-memory.js";
import { HistoryMemory } from "../src/events/rollups/history-memory.js";

/**
 * `npm run bench -- history-memory`: what the owner's memory of player histories takes on Node's heap, next to the
 * estimate its budget counts (src/events/rollups/history-memory.ts), for 20,000 histories of each shape. In-process: it
 * measures this process's heap, not a service's.
 */
const HISTORIES = 20_000;
const SHAPES = [
  { days: 1, names: 1 },
  { days: 5, names: 2 },
  { days: 30, names: 2 },
  { days: 30, names: 5 },
];

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** A history as the driver decodes one: fresh objects and strings of its own. */
function history(i: number, days: number, names: number) {
  const counts: Record<string, Record<string, number>> = {};
  for (let d = 0; d < days; d++) {
    const day: Record<string, number> = {};
    for (let n = 0; n < names; n++) day[`n${(i + n) % 5}`] = 1 + ((i + d + n) % 7);
    counts[`2026-10-${String(1 + d).padStart(2, "0")}`] = day;
  }
  return JSON.parse(JSON.stringify({ days: counts, cohorts: [`t/tag_${i % 10}`, `t/tag_${(i + 3) % 10}`] }));
}

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

export default async function historyMemoryBench() {
  const projectId = "0123456789abcdef01234567";
  // Each memory stays referenced until the end, so that no collection frees one while another is measured.
  const kept: HistoryMemory[] = [];
  const shapes = SHAPES.map(({ days, names }) => {
    const budget = new OwnerMemory(Number.MAX_SAFE_INTEGER);
    const memory = new HistoryMemory(budget);
    kept.push(memory);
    const before = heapUsed();
    for (let i = 0; i < HISTORIES; i++) {
      const identityKey = `u:player_${String(i).padStart(6, "0")}`;
      const { days: counts, cohorts } = history(i, days, names);
      const rollup = { identityKey, days: counts, sums: {}, cohorts, foldedInto: null, hw: 5 };
      memory.read(memory.epoch, projectId, identityKey, { id: `${projectId}/${identityKey}`, rollup, hw: 5 });
    }
    const measured = (heapUsed() - before) / HISTORIES;
    const estimated = budget.usedBytes / HISTORIES;
    return {
      days,
      names,
      heap_bytes_each: Math.round(measured),
      estimated_bytes_each: Math.round(estimated),
      estimate_to_heap: Math.round((estimated / measured) * 100) / 100,
    };
  });
  return { histories: HISTORIES, memories: kept.length, shapes };
}
