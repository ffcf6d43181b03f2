import { performance } from "node:perf_hooks";
import { load } from "./events.js";
import { postJson, createBenchProject, queueOf, round, startBenchService, type BenchService } from "./parts/support.js";

/**
 * `npm run bench -- names`: what a project at EVENT_NAME_LIMIT costs. Two
 * projects get the same 31,000 events over 31 days through the API: one with
 * 1,000 names (the limit: 63 cohort documents a month), the baseline with 8
 * (one document a month). Then, from a separate process (events-load.ts),
 * the charts of each: trends of every name, trends of one name, the names list.
 */
const DAYS = 31;
const EVENTS = 31_000;
const RUNS = 20;

function log(step: string): void {
  process.stderr.write(`names bench: ${step}\n`);
}

/** EVENTS events of `names` names over DAYS days (noon of each, the last yesterday's), 1,000 a call. */
async function send(bench: BenchService, key: string, names: number): Promise<void> {
  const now = Date.now();
  const noon = (d: number) => `${new Date(now - (DAYS - d) * 86_400_000).toISOString().slice(0, 10)}T12:00:00Z`;
  for (let from = 0; from < EVENTS; from += 1000) {
    const events = Array.from({ length: 1000 }, (_, k) => {
      const i = from + k;
      return { name: `event_${i % names}`, partner_user_id: `player_${i % 100}`, timestamp: noon(i % DAYS) };
    });
    const body = await postJson(bench, "/v1/events", key, { events });
    if (body.accepted !== events.length) throw new Error(`accepted ${body.accepted} of ${events.length}`);
  }
}

async function charts(bench: BenchService, key: string) {
  const now = Date.now();
  const range = {
    from: new Date(now - DAYS * 86_400_000).toISOString().slice(0, 10),
    to: new Date(now - 86_400_000).toISOString().slice(0, 10),
  };
  const query = (path: string, body: object) =>
    load({ kind: "query", baseUrl: bench.baseUrl, key, path, body, runs: RUNS });
  return {
    trends_every_name: await query("/v1/events/trends", range),
    trends_one_name: await query("/v1/events/trends", { ...range, names: ["event_7"] }),
    names_list: await query("/v1/events/names", range),
  };
}

export default async function namesBench() {
  const bench = await startBenchService();
  try {
    const atLimit = await createBenchProject(bench, 9_400_001);
    const few = await createBenchProject(bench, 9_400_002);
    log(`sending ${EVENTS} events of ${bench.config.eventNameLimit} names, then of 8`);
    const started = performance.now();
    await send(bench, atLimit.publicKey, bench.config.eventNameLimit);
    await send(bench, few.publicKey, 8);
    while ((await queueOf(bench)).queue_depth !== 0) await new Promise((resolve) => setTimeout(resolve, 200));
    const applied = (performance.now() - started) / 1000;
    log("charts");
    const limit = await charts(bench, atLimit.privateKey);
    const baseline = await charts(bench, few.privateKey);
    return {
      events_per_project: EVENTS,
      sent_and_applied_seconds: round(applied),
      at_name_limit: { names: bench.config.eventNameLimit, ...limit },
      baseline_8_names: baseline,
      ratio_p50_every_name: round(limit.trends_every_name.p50_ms / baseline.trends_every_name.p50_ms, 2),
      ratio_p50_one_name: round(limit.trends_one_name.p50_ms / baseline.trends_one_name.p50_ms, 2),
    };
  } finally {
    await bench.stop();
  }
}
