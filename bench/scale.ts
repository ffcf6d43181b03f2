/**
 * `npm run bench -- scale`: the service at a real game's size (issue 46): a project of 1,000,000 players and
 * 100,000,000 events over 120 days written in its stored shape, the KPI reads timed from a separate process beside
 * DuckDB's answers to the same questions from the same raw events, the apply rate beside a 20,000-player project's,
 * memory and restarts (parts/scale-bench.ts; BENCH_SCALE_PLAYERS and BENCH_SCALE_EVENTS make it smaller).
 */
import { scaleBench } from "./parts/scale-bench.js";

export default scaleBench;
