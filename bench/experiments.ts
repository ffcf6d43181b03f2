import { performance } from "node:perf_hooks";
import { createExperimentStore } from "../src/config/capability.js";
import { engineOf } from "../src/db/engine.js";
import { createCohortSets } from "../src/players/capability.js";
import { exposedSet } from "../src/players/cohorts/cohort-sets.js";
import { createSets } from "../src/sets/capability.js";
import { createBenchProject, postJson, queueOf, round, startBenchService, type BenchService } from "./parts/support.js";

/**
 * `npm run bench -- experiments`: experiments/results of an experiment with 100,000 exposed players (three variants),
 * exposed over the 30 days before today (the experiment started then: the service's clock set back), each player with
 * events on some of those days (`open`, and `buy` with a summed `gold`). Each metric is asked RUNS times in a row: its p50 and
 * worst, the first call apart (it reads the chunks into the instance's cache).
 */
const PLAYERS = 100_000;
const DAYS = 30;
const RUNS = 10;
const DAY_MS = 86_400_000;
const BATCH = 5_000;

const log = (step: string) => process.stderr.write(`experiments bench: ${step}\n`);

/**
 * The players numbered and put in their variant's sets (all and by day) as an exposure puts them, through the same
 * CohortSets, in batches: 100,000 evaluate calls would take most of an hour on a loaded 2-core machine, and results
 * read only the sets. Written before the service reads the project's sets or numbers, so its cache holds nothing of
 * them (it reads them from the database at the first results call).
 */
async function expose(bench: BenchService, projectId: string): Promise<void> {
  const engine = engineOf(bench.database);
  const sets = createSets({ database: bench.database, engine, cacheBytes: 0 });
  const cohorts = createCohortSets(sets, createExperimentStore(bench.database, engine));
  const today = Date.now();
  for (let from = 0; from < PLAYERS; from += BATCH) {
    const keys = Array.from({ length: Math.min(BATCH, PLAYERS - from) }, (_, k) => `u:player_${from + k}`);
    const numbers = await sets.numbers.assign(projectId, keys);
    const changes = keys.map((key, k) => {
      const i = from + k;
      const variant = ["a", "b", "c"][i % 3];
      const day = new Date(today - (DAYS - Math.floor((i * DAYS) / PLAYERS)) * DAY_MS).toISOString().slice(0, 10);
      const join = [exposedSet("exp", variant), exposedSet("exp", variant, day)];
      return { number: numbers.get(key)!, join, leave: [], traits: new Map() };
    });
    await cohorts.write(projectId, changes);
  }
}

export default async function experimentsBench() {
  let offsetMs = 0;
  const bench = await startBenchService({}, { clock: { now: () => new Date(Date.now() + offsetMs) } });
  try {
    const { projectId, privateKey } = await createBenchProject(bench, 4_800_001);
    const variants = ["a", "b", "c"].map((name) => ({ name, weight: 1 }));
    offsetMs = -DAYS * DAY_MS;
    await postJson(bench, "/v1/experiments/update", privateKey, { name: "exp", variants, state: "running" });
    offsetMs = 0;
    const exposing = performance.now();
    await expose(bench, projectId);
    const exposures_per_sec = round(PLAYERS / ((performance.now() - exposing) / 1000));
    log(`${PLAYERS} players exposed, ${exposures_per_sec}/s`);
    await postJson(bench, "/v1/events/properties/update", privateKey, { name: "buy", property: "gold", sum: true });
    const now = Date.now();
    let events = 0;
    for (let from = 0; from < PLAYERS; from += 250) {
      const batch = [];
      for (let i = from; i < from + 250; i++) {
        for (let d = 1 + (i % 3); d <= DAYS; d += 10) {
          const timestamp = new Date(now - d * DAY_MS).toISOString();
          batch.push({ name: "open", partner_user_id: `player_${i}`, timestamp });
          if ((i + d) % 5 === 0)
            batch.push({
              name: "buy",
              partner_user_id: `player_${i}`,
              timestamp,
              properties: { gold: (i % 50) + 0.25 },
            });
        }
      }
      events += batch.length;
      for (let k = 0; k < batch.length; k += 1000) {
        await postJson(bench, "/v1/events", privateKey, { events: batch.slice(k, k + 1000) });
      }
    }
    while ((await queueOf(bench)).queue_depth !== 0) await new Promise((resolve) => setTimeout(resolve, 200));
    log(`${events} events applied`);
    const metrics = {
      return_day_1: { kind: "return", days: 1 },
      return_day_7: { kind: "return", days: 7 },
      event_buy_7_days: { kind: "event", days: 7, name: "buy" },
      sum_gold_7_days: { kind: "sum", days: 7, name: "buy", property: "gold" },
    };
    const results: Record<string, object> = {};
    for (const [label, metric] of Object.entries(metrics)) {
      const times: number[] = [];
      let answer: any;
      for (let run = 0; run <= RUNS; run++) {
        const started = performance.now();
        answer = await postJson(bench, "/v1/experiments/results", privateKey, { name: "exp", metric });
        times.push(performance.now() - started);
      }
      const [first, ...rest] = times;
      rest.sort((x, y) => x - y);
      results[label] = {
        first_ms: round(first),
        p50_ms: round(rest[Math.floor(rest.length / 2)]),
        max_ms: round(rest.at(-1)!),
        exposed: answer.variants.map((one: { exposed: number }) => one.exposed),
      };
      log(`${label}: ${JSON.stringify(results[label])}`);
    }
    return { players: PLAYERS, days: DAYS, events, exposures_per_sec, results };
  } finally {
    await bench.stop();
  }
}
