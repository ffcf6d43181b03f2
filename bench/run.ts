import { readdirSync } from "node:fs";

// `npm run bench -- <name>` runs bench/<name>.ts; without a name, every benchmark in turn.
// The benchmarks' parts (shared support, the load generators, verify's bare handler, figures and profiler) are in parts/.
const PARTS = ["run.ts"];
const available = readdirSync(new URL(".", import.meta.url))
  .filter((file) => file.endsWith(".ts") && !PARTS.includes(file))
  .map((file) => file.slice(0, -3));
const requested = process.argv.slice(2);
const unknown = requested.filter((name) => !available.includes(name));
if (unknown.length > 0) {
  process.stderr.write(`unknown benchmark ${unknown.join(", ")}; available: ${available.join(", ")}\n`);
  process.exit(2);
}
for (const name of requested.length > 0 ? requested : available) {
  const benchmark = (await import(`./${name}.js`)) as { default: () => Promise<unknown> };
  const result = await benchmark.default();
  process.stdout.write(`${JSON.stringify({ benchmark: name, ...(result as object) }, null, 2)}\n`);
}
