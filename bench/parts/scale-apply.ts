import { performance } from "node:perf_hooks";
import { EVENT_NAMES } from "./scale-model.js";
import { queueOf, round, runLoadProcess, type BenchService } from "./support.js";

/** The stream: 200 calls of 500 events, 4 in flight, of 20,000 players. */
const CALLS = 200;
const BATCH = 500;
const CONCURRENCY = 4;
/** Each project streams this many times, in turns, so that neither is measured only first or only last. */
const ROUNDS = 2;
/** The target: the large project applies at no less than this share of the small one's rate. */
const TARGET_RATIO = 0.8;

export interface StreamTarget {
  label: string;
  project: { projectId: string; publicKey: string };
  /** The stream's players: `count` of the model's, spread evenly over its first `of` (scale-load.ts). */
  players: { seed: number; count: number; of: number };
}

/** The stream into `target`, from a process of its own (scale-load.ts), timed until the queue is drained. */
async function applyRate(bench: BenchService, target: StreamTarget) {
  const started = performance.now();
  const load = await runLoadProcess("bench/parts/scale-load.ts", {
    baseUrl: bench.baseUrl,
    key: target.project.publicKey,
    ...target.players,
    names: EVENT_NAMES,
    calls: CALLS,
    batch: BATCH,
    concurrency: CONCURRENCY,
  });
  // A /readyz that missed its deadline under load reports no depth (NaN): that is not drained.
  while (!((await queueOf(bench)).queue_depth <= 0)) await new Promise((resolve) => setTimeout(resolve, 100));
  const seconds = (performance.now() - started) / 1000;
  return { ...load, apply_seconds: round(seconds, 2), events_per_sec: Math.round(load.accepted / seconds) };
}

/**
 * The same stream applied into each target in turn, ROUNDS times: each round's rates, each target's rate over its
 * rounds, and the last target's rate over the first's (the large project's over the small one's).
 */
export async function applyComparison(bench: BenchService, targets: readonly [StreamTarget, StreamTarget]) {
  const rounds: Record<string, unknown>[] = [];
  const totals = targets.map(() => ({ events: 0, seconds: 0 }));
  for (let round_ = 0; round_ < ROUNDS; round_++) {
    for (const [i, target] of targets.entries()) {
      const rate = await applyRate(bench, target);
      totals[i].events += rate.accepted;
      totals[i].seconds += rate.apply_seconds;
      rounds.push({ project: target.label, ...rate });
    }
  }
  const rates = totals.map(({ events, seconds }) => Math.round(events / seconds));
  const ratio = round(rates[1] / rates[0], 2);
  return {
    stream: { calls: CALLS, events_per_call: BATCH, concurrency: CONCURRENCY, players: targets[0].players.count },
    rounds,
    events_per_sec: Object.fromEntries(targets.map((target, i) => [target.label, rates[i]])),
    ratio,
    met: ratio >= TARGET_RATIO,
  };
}
