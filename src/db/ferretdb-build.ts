import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, cp, mkdir, readFile, readdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Logger } from "../log.js";
import { findOnPath, NoDatabaseError, runCommand } from "./process.js";

/** The Go wrapper around FerretDB's embeddable package (see tools/ferretdb/main.go). */
const SOURCE_DIR = fileURLToPath(new URL("../../tools/ferretdb/", import.meta.url));
const SOURCE_FILES = ["go.mod", "go.sum", "main.go"];
const FERRETDB_MODULE = "github.com/FerretDB/FerretDB";

/** The build's changes to FerretDB's source: each replaces one exact text, which must be there. */
const PATCHES = [
  /**
   * FerretDB 1.24's SQLite backend indexes `_id` as `_ferretdb_sjson->"_id"` but
   * filters on `_ferretdb_sjson->'$._id'`. SQLite uses an expression index only
   * for the identical expression, so every lookup, update and delete by `_id`
   * scanned the whole collection. The build filters on the indexed expression.
   */
  {
    file: "internal/backends/sqlite/metadata/metadata.go",
    from: `IDColumn = DefaultColumn + "->'$._id'"`,
    to: `IDColumn = DefaultColumn + "->\\"_id\\""`,
  },
  /**
   * Its leak tracking adds every transaction, row set and iterator to a pprof
   * profile, which records a stack trace each time: 15% of the engine's CPU per
   * upsert (docs/database.md, "The FerretDB fix"). It only reports leaks, so
   * only debug builds keep it, as they alone keep its stacks.
   */
  {
    file: "internal/util/resource/resource.go",
    from: "func Track(obj any, token *Token) {\n\tcheckArgs(obj, token)\n",
    to: "func Track(obj any, token *Token) {\n\tcheckArgs(obj, token)\n\tif !debugbuild.Enabled {\n\t\treturn\n\t}\n",
  },
  {
    file: "internal/util/resource/resource.go",
    from: "func Untrack(obj any, token *Token) {\n\tcheckArgs(obj, token)\n",
    to: "func Untrack(obj any, token *Token) {\n\tcheckArgs(obj, token)\n\tif !debugbuild.Enabled {\n\t\treturn\n\t}\n",
  },
];

const execFileAsync = promisify(execFile);
/** What the go toolchain needs of this process's environment, and nothing else (no keys of the service). */
const GO_VARIABLES = /^(PATH|HOME|TMPDIR|XDG_\w+|GO\w*|https?_proxy|HTTPS?_PROXY|no_proxy|NO_PROXY)$/;
const GO_ENV = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => GO_VARIABLES.test(name))),
  GOFLAGS: "-mod=mod",
  CGO_ENABLED: "0",
};

/**
 * Returns the path of the FerretDB binary, building it with `go` the first time.
 * The cache folder is keyed by a hash of the wrapper's sources and the patch,
 * so a change to either (a FerretDB upgrade) builds again.
 */
export async function ensureFerretDbBinary(cacheDir: string, log: Logger): Promise<string> {
  const hash = createHash("sha256");
  for (const file of SOURCE_FILES) hash.update(await readFile(path.join(SOURCE_DIR, file)));
  hash.update(JSON.stringify(PATCHES));
  const dir = path.join(cacheDir, `ferretdb-${hash.digest("hex").slice(0, 12)}`);
  const binary = path.join(dir, "ferretdb");
  if (existsSync(binary)) return binary;
  if (!findOnPath("go")) {
    throw new NoDatabaseError(
      "no database: no MONGODB_URI, no mongod on PATH, and no go on PATH to build the embedded FerretDB. " +
        "Set MONGODB_URI, install a mongod (or set MONGOD_BINARY), or install Go >= 1.24 for the first build",
    );
  }

  log.info({ dir }, "building FerretDB 1.24 with go, once (a few minutes on a fresh machine)");
  const started = Date.now();
  const progress = setInterval(
    () => log.info({ seconds: Math.round((Date.now() - started) / 1000) }, "still building FerretDB"),
    15_000,
  );
  // Build in a folder of this process's own and rename the result, so a concurrent start never runs a half-written file.
  const work = path.join(dir, `build-${process.pid}`);
  try {
    await rm(work, { recursive: true, force: true });
    await mkdir(work, { recursive: true });
    await buildPatched(work, (line) => log.info({ go: line }, "building FerretDB"));
    await rename(path.join(work, "ferretdb"), binary);
  } finally {
    clearInterval(progress);
    await rm(work, { recursive: true, force: true }).catch((err: unknown) =>
      log.warn({ err, dir: work }, "could not remove the FerretDB build folder"),
    );
  }
  log.info({ seconds: Math.round((Date.now() - started) / 1000) }, "FerretDB built");
  return binary;
}

/** Builds the wrapper in `work` against a patched copy of the FerretDB module. */
async function buildPatched(work: string, onLine: (line: string) => void): Promise<void> {
  for (const file of SOURCE_FILES) await cp(path.join(SOURCE_DIR, file), path.join(work, file));
  const moduleDir = await downloadModule(work);
  const copy = path.join(work, "ferretdb-module");
  await cp(moduleDir, copy, { recursive: true });
  await makeWritable(copy);

  for (const patch of PATCHES) {
    const target = path.join(copy, patch.file);
    const source = await readFile(target, "utf8");
    if (!source.includes(patch.from)) throw new Error(`FerretDB source changed: ${patch.file} lacks ${patch.from}`);
    await writeFile(target, source.replace(patch.from, patch.to));
  }

  await runCommand("go", ["mod", "edit", `-replace=${FERRETDB_MODULE}=./ferretdb-module`], {
    cwd: work,
    env: GO_ENV,
    onLine,
  });
  await runCommand("go", ["build", "-o", "ferretdb", "."], { cwd: work, env: GO_ENV, onLine });
}

/** The folder of the pinned FerretDB module in Go's module cache, downloading it if needed. */
async function downloadModule(work: string): Promise<string> {
  // stdout only: go may also report on stderr (a toolchain download, say).
  const { stdout } = await execFileAsync("go", ["mod", "download", "-json", FERRETDB_MODULE], {
    cwd: work,
    env: GO_ENV,
  });
  const { Dir } = JSON.parse(stdout) as { Dir?: string };
  if (!Dir) throw new Error(`go mod download gave no folder for ${FERRETDB_MODULE}`);
  return Dir;
}

/** Go's module cache is read-only; the copy must be writable to patch it and to remove it afterwards. */
async function makeWritable(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    await chmod(path.join(entry.parentPath, entry.name), entry.isDirectory() ? 0o755 : 0o644);
  }
}
