import { readdirSync } from "node:fs";

// `npm run bench -- <name>` runs bench/<name>.ts; without a name, every benchmark in turn.
// The other files are parts of benchmarks: this runner, shared support, the load generators, and verify's bare handler, figures and profiler.
const PARTS = [
  "run.ts",
  "support.ts",
  "events-load.ts",
  "players-load.ts",
  "events-raw.ts",
  "kpis-raw.ts",
  "soak-load.ts",
  "verify-load.ts",
  "verify-bare.ts",
  "verify-figures.ts",
  "cpu-profile.ts",
];
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
