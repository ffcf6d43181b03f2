/**
 * The scale bench's DuckDB side, a process of its own (DuckDB's memory is not the service's): opens the file the
 * generator wrote, answers each question (scale-questions.ts) from the raw events joined with the players' tags,
 * `runs` times, and prints one JSON line: per question its answer and its times.
 */
import { performance } from "node:perf_hooks";
import { DuckDBInstance } from "@duckdb/node-api";
import { DUCK_OPTIONS } from "./scale-duck-writer.js";
import { scaleQuestions, type QuestionContext } from "./scale-questions.js";

const task = JSON.parse(process.argv[2]) as { file: string; context: QuestionContext; runs: number };

const instance = await DuckDBInstance.create(task.file, { ...DUCK_OPTIONS, access_mode: "READ_ONLY" });
const connection = await instance.connect();
const answers: Record<string, { answer: unknown; first_ms: number; p50_ms: number; min_ms: number }> = {};
for (const question of scaleQuestions(task.context)) {
  const times: number[] = [];
  let rows: Record<string, unknown>[] = [];
  for (let run = 0; run < task.runs; run++) {
    const started = performance.now();
    rows = (await connection.runAndReadAll(question.sql)).getRowObjectsJson() as Record<string, unknown>[];
    times.push(performance.now() - started);
  }
  const [first, ...warm] = times;
  const sorted = (warm.length > 0 ? warm : times).sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  answers[question.label] = {
    answer: question.fromRows(rows),
    first_ms: round(first),
    p50_ms: round(sorted[Math.floor(sorted.length / 2)]),
    min_ms: round(sorted[0]),
  };
  process.stderr.write(`scale duckdb: ${question.label} ${JSON.stringify(times.map(round))}\n`);
}
connection.closeSync();
instance.closeSync();
process.stdout.write(`${JSON.stringify(answers)}\n`);
