import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SRC = join(ROOT, "src");

/** The most source files (tests apart) a folder of `src` holds, so its rooms show in the folders. */
const MAX_FOLDER_FILES = 20;

/** Every `.ts` file under `dir`. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** `import ... from` and `export ... from` a relative path, type-only ones included; `import "../x.js"` too. */
const RELATIVE_IMPORT = /^\s*(?:import|export)\s(?:[^;]*?\sfrom\s+)?["'](\.{1,2}\/[^"']+)["']/gm;

/** The `src` files `file` imports by a relative path (a `.js` specifier names its `.ts` source). */
function importsOf(file: string, text: string): string[] {
  return [...text.matchAll(RELATIVE_IMPORT)]
    .map((match) => resolve(dirname(file), match[1].replace(/\.js$/, ".ts")))
    .filter((path) => path.startsWith(SRC + "/"));
}

/** Each cycle of `graph` found by a depth-first walk, as the files around it, the first one repeated at the end. */
function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const done = new Set<string>();
  const path: string[] = [];
  const cycles: string[][] = [];
  const visit = (file: string) => {
    const at = path.indexOf(file);
    if (at >= 0) return void cycles.push([...path.slice(at), file]);
    if (done.has(file)) return;
    path.push(file);
    for (const next of graph.get(file) ?? []) visit(next);
    path.pop();
    done.add(file);
  };
  for (const file of [...graph.keys()].sort()) visit(file);
  return cycles;
}

describe("imports in src", () => {
  it("finds a cycle, type-only and multi-line imports included", () => {
    const a = join(SRC, "a.ts");
    const b = join(SRC, "x", "b.ts");
    const graph = new Map([
      [a, importsOf(a, 'import type {\n  B,\n} from "./x/b.js";\n')],
      [b, importsOf(b, 'import { thing } from "../a.js";\nimport "../c.js";\n')],
    ]);
    expect(cyclesOf(graph)).toEqual([[a, b, a]]);
  });

  it("form no cycle", () => {
    const files = sourceFiles(SRC);
    const graph = new Map(files.map((file) => [file, importsOf(file, readFileSync(file, "utf8"))]));
    const cycles = cyclesOf(graph).map((cycle) => cycle.map((file) => relative(ROOT, file)).join(" → "));
    expect(cycles).toEqual([]);
  });
});

describe("folders of src", () => {
  it(`hold at most ${MAX_FOLDER_FILES} source files each, tests apart`, () => {
    const perFolder = new Map<string, number>();
    for (const file of sourceFiles(SRC).filter((file) => !file.endsWith(".test.ts"))) {
      const folder = relative(ROOT, dirname(file));
      perFolder.set(folder, (perFolder.get(folder) ?? 0) + 1);
    }
    expect([...perFolder].filter(([, count]) => count > MAX_FOLDER_FILES)).toEqual([]);
  });
});
