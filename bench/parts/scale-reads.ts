import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { isDeepStrictEqual } from "node:util";
import { dayOfNumber } from "../../src/events/kpis/periods.js";
import { profileStretch } from "./cpu-profile.js";
import { partnerIdOf } from "./scale-model.js";
import { scaleQuestions, type Question, type QuestionContext } from "./scale-questions.js";
import { postJson, processCpuMs, round, runLoadProcess, type BenchService } from "./support.js";

/** Each read's target: its p50 (issue 46); a tag change is counted by the very next read, of this many players. */
const TARGET_P50_MS = 100;
const TAG_CHECK_PLAYERS = 100;

/** A read from the load generator's process (events-load.ts): `runs` calls in a row, p50 and p99. */
export const query = (bench: BenchService, key: string, q: Question, runs: number) =>
  runLoadProcess("bench/parts/events-load.ts", {
    kind: "query",
    baseUrl: bench.baseUrl,
    key,
    path: q.path,
    body: q.body,
    runs,
  });

/** A run's result, or its failure's message (the bench goes on to the next figure). */
export async function failureAsText<T>(run: () => Promise<T>): Promise<T | string> {
  try {
    return await run();
  } catch (error) {
    return `failed: ${(error as Error).message}`;
  }
}

/** CPU time so far, in ms, of the service (it runs in this process) and of the embedded database's process. */
function cpuSoFar(bench: BenchService) {
  const { user, system } = process.cpuUsage();
  return { service: (user + system) / 1000, database: processCpuMs(bench.databasePid()) };
}

/** Every question's answer from the service checked equal to DuckDB's; the first difference of each that is not. */
async function checkAnswers(bench: BenchService, key: string, questions: Question[], duck: Record<string, any>) {
  const differences: Record<string, unknown> = {};
  for (const q of questions) {
    const answer = await failureAsText(() => postJson(bench, q.path, key, q.body));
    if (typeof answer === "string") differences[q.label] = answer;
    else if (!isDeepStrictEqual(q.fromService(answer), duck[q.label].answer))
      differences[q.label] = firstDifference(q.fromService(answer), duck[q.label].answer);
  }
  return differences;
}

function firstDifference(a: unknown, b: unknown, at = "answer"): unknown {
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return { at, service: a, duckdb: b };
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const [x, y] = [(a as any)[key], (b as any)[key]];
    if (!isDeepStrictEqual(x, y)) return firstDifference(x, y, `${at}.${key}`);
  }
  return { at };
}

/**
 * The reads of a freshly started service: each question's first (cold) read; DuckDB's answers to them from the raw
 * events (scale-duck.ts), each checked equal to the service's; then `runs` reads of each, timed from the load
 * generator's process with the CPU they cost; and a CPU profile of each read that missed its target.
 */
export async function timeReads(
  bench: BenchService,
  key: string,
  options: {
    context: QuestionContext;
    duckFile: string;
    runs: number;
    duckRuns: number;
    log: (step: string, value?: unknown) => void;
  },
) {
  const { context, runs, log } = options;
  const questions = scaleQuestions(context);
  // No read is filled before an instance is ready: the first of each is what a cold instance costs.
  const firstReads: Record<string, number | string> = {};
  for (const q of questions)
    firstReads[q.label] = await failureAsText(async () => (await query(bench, key, q, 1)).p50_ms);
  log("first reads", firstReads);
  const afterFirstReads = process.memoryUsage().rss;

  const duck = await runLoadProcess("bench/parts/scale-duck.ts", {
    file: options.duckFile,
    context,
    runs: options.duckRuns,
  });
  const differences = await checkAnswers(bench, key, questions, duck);
  log(Object.keys(differences).length === 0 ? "every answer equal to DuckDB's" : "answers differ", differences);

  const reads: Record<string, { met: boolean }> = {};
  for (const q of questions) {
    const before = cpuSoFar(bench);
    const timed = await failureAsText(() => query(bench, key, q, runs));
    const after = cpuSoFar(bench);
    const duckMs = duck[q.label].p50_ms as number;
    const p50 = typeof timed === "string" ? Infinity : (timed.p50_ms as number);
    reads[q.label] = {
      first_read_ms: firstReads[q.label],
      ...(typeof timed === "string" ? { error: timed } : timed),
      service_cpu_ms_per_call: round((after.service - before.service) / runs, 2),
      database_cpu_ms_per_call:
        after.database === null || before.database === null
          ? null
          : round((after.database - before.database) / runs, 2),
      duckdb_first_ms: duck[q.label].first_ms,
      duckdb_p50_ms: duckMs,
      service_p50_over_duckdb: round(p50 / duckMs, 4),
      met: p50 <= TARGET_P50_MS,
      load_average_1m: os.loadavg()[0],
    };
    log(q.label, reads[q.label]);
  }
  // Where the CPU of each read that missed its target goes.
  const profiles: Record<string, unknown> = {};
  for (const q of questions.filter((one) => !reads[one.label].met)) {
    profiles[q.label] = await profileStretch({
      file: path.join(os.tmpdir(), `scale-${q.label}.cpuprofile`),
      calls: runs,
      stretch: () => query(bench, key, q, runs),
    });
  }
  return {
    answers_equal_to_duckdb: Object.keys(differences).length === 0 ? true : differences,
    reads,
    profiles_of_reads_over_target: profiles,
    service_rss_mb_after_first_reads: Math.round(afterFirstReads / 2 ** 20),
  };
}

/**
 * A tag given to 100 of the model's players (spread over its first `of`), then the very next read: active players
 * over the days `from` to `to` (dayNumbers: the whole history) split by the tag, whose new players must be all 100.
 */
export async function tagCheck(
  bench: BenchService,
  keys: { publicKey: string; privateKey: string },
  players: { seed: number; of: number; from: number; to: number },
) {
  const tag = "scale_check";
  const ids = Array.from({ length: TAG_CHECK_PLAYERS }, (_, k) =>
    partnerIdOf(players.seed, Math.floor((k * players.of) / TAG_CHECK_PLAYERS)),
  );
  const started = performance.now();
  await postJson(bench, "/v1/players/update", keys.publicKey, {
    players: ids.map((partner_user_id) => ({ partner_user_id, tags_add: [tag] })),
  });
  const updated = performance.now();
  const range = { from: dayOfNumber(players.from), to: dayOfNumber(players.to) };
  const read = await postJson(bench, "/v1/events/active", keys.privateKey, { ...range, split_by: "tags", tags: [tag] });
  const counted = read.series[0].points.reduce((sum: number, p: { new_players: number }) => sum + p.new_players, 0);
  return {
    players: ids.length,
    update_ms: round(updated - started),
    next_read_ms: round(performance.now() - updated),
    next_read_counts: counted,
    met: counted === ids.length,
  };
}
