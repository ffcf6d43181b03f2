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
/** FerretDB's pushdown of `_id` equality, in its query and in its explain (collection.go). */
const ID_EQUALITY_CASE = [
  "\t\tcase string, types.ObjectID:",
  "\t\t\twhereClause = fmt.Sprintf(` WHERE %s = ?`, metadata.IDColumn)",
  "\t\t\targs = []any{string(must.NotFail(sjson.MarshalSingleValue(v)))}\n",
].join("\n");
const ID_EQUALITY_EXPLAINED = [
  "\t\tcase string, types.ObjectID:",
  "\t\t\tfilterPushdown = true",
  "\t\t\twhereClause = fmt.Sprintf(` WHERE %s = ?`, metadata.IDColumn)",
  "\t\t\targs = []any{string(must.NotFail(sjson.MarshalSingleValue(v)))}\n",
].join("\n");
const ID_RANGE_CASE = [
  "\t\tcase *types.Document:",
  "\t\t\tif low, high, ok := idPrefixRange(v.(*types.Document)); ok {",
  "\t\t\t\twhereClause = fmt.Sprintf(` WHERE %s >= ? AND %s < ?`, metadata.IDColumn, metadata.IDColumn)",
  "\t\t\t\targs = []any{low, high}",
  "\t\t\t}\n",
].join("\n");
/**
 * The indexed column holds `_id` as JSON text: a string is a quote, its characters (escaped where JSON needs it), a
 * quote. For strings of characters above the quote that need no escaping, the text of `s` lies between the texts of
 * `p` and `q` exactly when `s` does: the trailing quote is below every character it can meet there.
 */
const ID_PREFIX_RANGE_FUNC = `// idPrefixRange answers {$gte: p, $lt: q} as bounds of the indexed JSON text of _id, when every byte of p and q
// is above '"' and needs no escaping in JSON.
func idPrefixRange(d *types.Document) (string, string, bool) {
\tif d.Len() != 2 {
\t\treturn "", "", false
\t}
\tlow, _ := d.Get("$gte")
\thigh, _ := d.Get("$lt")
\tp, okP := low.(string)
\tq, okQ := high.(string)
\tif !okP || !okQ || p >= q {
\t\treturn "", "", false
\t}
\tfor _, s := range []string{p, q} {
\t\tfor i := 0; i < len(s); i++ {
\t\t\tif c := s[i]; c <= '"' || c >= 0x7f || c == '\\\\' || c == '<' || c == '>' || c == '&' {
\t\t\t\treturn "", "", false
\t\t\t}
\t\t}
\t}
\treturn \`"\` + p, \`"\` + q, true
}

`;

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
  /**
   * A filter of `_id` alone by a range, `{$gte: "p/", $lt: "p0"}` (every `_id` starting with "p/": a project's
   * documents, src/db/ids.ts; or a range of days of one project's), scanned the whole collection: only `_id`
   * equality reached the index. The build answers it from the index too, for the query and for `explain`;
   * FerretDB's own filter still runs on what the index returns.
   */
  {
    file: "internal/backends/sqlite/collection.go",
    from: ID_EQUALITY_CASE,
    to: ID_EQUALITY_CASE + ID_RANGE_CASE,
  },
  {
    file: "internal/backends/sqlite/collection.go",
    from: ID_EQUALITY_EXPLAINED,
    to:
      ID_EQUALITY_EXPLAINED +
      ID_RANGE_CASE.replace("\t\t\t\twhereClause", "\t\t\t\tfilterPushdown = true\n\t\t\t\twhereClause"),
  },
  {
    file: "internal/backends/sqlite/collection.go",
    from: "// Stats implements backends.Collection interface.\n",
    to: ID_PREFIX_RANGE_FUNC + "// Stats implements backends.Collection interface.\n",
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
