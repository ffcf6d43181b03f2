import { createBenchProject, measure, postJson, round, runLoadProcess, startBenchService } from "./parts/support.js";

/**
 * `npm run bench -- exports`: a `players/get` of a project while EXPORTS whole-project exports of it stream
 * (BENCH_EXPORTS_PROFILES profiles, 20,000 by default), beside the same get on the idle service, each from a load
 * generator of its own process (exports-load.ts). The streams' bounds are raised to EXPORTS for the run, so every
 * export is served and none is refused.
 */
const PROFILES = Number(process.env.BENCH_EXPORTS_PROFILES ?? 20_000);
const EXPORTS = Number(process.env.BENCH_EXPORTS_STREAMS ?? 10);
const GETS = Number(process.env.BENCH_EXPORTS_GETS ?? 1_000);

function log(step: string): void {
  process.stderr.write(`exports bench: ${step}\n`);
}

export default async function exportsBench() {
  const bench = await startBenchService({
    STREAMS_PER_KEY: String(EXPORTS),
    STREAMS_PER_PROJECT: String(EXPORTS),
  });
  try {
    const { privateKey } = await createBenchProject(bench, 4_900_001);
    log(`${PROFILES} profiles, 100 a call, each with two tags and two traits`);
    await measure({
      concurrency: 4,
      total: Math.ceil(PROFILES / 100),
      run: async (call) => {
        const players = Array.from({ length: Math.min(100, PROFILES - call * 100) }, (_, k) => {
          const i = call * 100 + k;
          return {
            partner_user_id: `player_${i}`,
            tags_add: [`level_${i % 10}`, i % 2 === 0 ? "whale" : "minnow"],
            traits: { region: ["eu", "us", "asia"][i % 3], level: i % 50 },
          };
        });
        await postJson(bench, "/v1/players/update", privateKey, { players });
      },
    });
    const task = { baseUrl: bench.baseUrl, key: privateKey, gets: GETS, players: PROFILES };
    log("players/get, idle");
    const idle = await runLoadProcess("bench/parts/exports-load.ts", { ...task, exports: 0 });
    log(`players/get during ${EXPORTS} exports`);
    const loaded = await runLoadProcess("bench/parts/exports-load.ts", { ...task, exports: EXPORTS });
    log("players/get, idle again");
    const idleAfter = await runLoadProcess("bench/parts/exports-load.ts", { ...task, exports: 0 });
    return {
      database: bench.database.isFerretDb ? "ferretdb" : "mongodb",
      profiles: PROFILES,
      exports: EXPORTS,
      get_idle: idle.get,
      get_during_exports: loaded.get,
      get_idle_after: idleAfter.get,
      exports_during_gets: loaded.exports,
      ratios: { get_p99_during_exports_vs_idle: round(loaded.get.p99_ms / idle.get.p99_ms, 2) },
    };
  } finally {
    await bench.stop();
  }
}
