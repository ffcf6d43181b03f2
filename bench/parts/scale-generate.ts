/**
 * The scale bench's generator, a process of its own (its memory and CPU are not the service's): reads one
 * GenerateTask as JSON from argv, writes the project (scale-write.ts) and prints one JSON line of its figures.
 */
import { generate } from "./scale-write.js";

const started = performance.now();
const figures = await generate(JSON.parse(process.argv[2]));
const rss_mb = Math.round(process.memoryUsage().rss / 2 ** 20);
process.stdout.write(
  `${JSON.stringify({ ...figures, seconds: Math.round(performance.now() - started) / 1000, rss_mb })}\n`,
);
