import { createHash } from "node:crypto";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

/** The dashboard's browser source (TypeScript, HTML, CSS). */
const SOURCE_DIR = path.resolve(import.meta.dirname, "../../dashboard");
/** Where the built assets go and are served from (not committed: a fresh clone builds them). */
export const DASHBOARD_DIST_DIR = path.resolve(import.meta.dirname, "../../dist/dashboard");
/** A digest of the sources and the chart library's version, written last: assets without it are missing or partial. */
const SOURCES_DIGEST_FILE = ".sources";

/**
 * Builds the dashboard unless the assets in DASHBOARD_DIST_DIR were built from the sources as they are now.
 * The check reads a handful of small files, so a start with fresh assets stays fast.
 */
export async function ensureDashboardBuilt({ force = false } = {}): Promise<"built" | "fresh"> {
  const digest = await sourcesDigest();
  const built = await readFile(path.join(DASHBOARD_DIST_DIR, SOURCES_DIGEST_FILE), "utf8").catch(() => undefined);
  if (!force && built === digest) return "fresh";
  await rm(DASHBOARD_DIST_DIR, { recursive: true, force: true });
  await mkdir(DASHBOARD_DIST_DIR, { recursive: true });
  await build({
    entryPoints: [path.join(SOURCE_DIR, "main.ts")],
    bundle: true,
    minify: true,
    format: "esm",
    target: "es2022",
    // The CSS the scripts import (uPlot's, the dashboard's own) comes out as app.css beside app.js.
    outfile: path.join(DASHBOARD_DIST_DIR, "app.js"),
    logLevel: "warning",
  });
  await writeFile(path.join(DASHBOARD_DIST_DIR, "index.html"), await readFile(path.join(SOURCE_DIR, "index.html")));
  await writeFile(path.join(DASHBOARD_DIST_DIR, SOURCES_DIGEST_FILE), digest);
  return "built";
}

async function sourcesDigest(): Promise<string> {
  const hash = createHash("sha256");
  const files = (await readdir(SOURCE_DIR, { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
  for (const file of files)
    hash
      .update(path.relative(SOURCE_DIR, file))
      .update("\0")
      .update(await readFile(file));
  const uplotManifest = createRequire(import.meta.url).resolve("uplot/package.json");
  const uplot = JSON.parse(await readFile(uplotManifest, "utf8")) as { version: string };
  return hash.update(`uplot@${uplot.version}`).digest("hex");
}

// `npm run build`: always builds.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await ensureDashboardBuilt({ force: true });
}
