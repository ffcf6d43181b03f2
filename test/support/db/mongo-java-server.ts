import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { cp, mkdir, readFile, readdir, rename, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";
import { stripVTControlCharacters } from "node:util";
import { runCommand, stopProcess, waitForMongo } from "../../../src/db/process.js";
import type { Logger } from "../../../src/log.js";

/**
 * mongo-java-server (in-memory backend) as a second test engine: unlike FerretDB it applies an
 * update's filter and write atomically, as MongoDB does per document, so the service's version and
 * count guards decide races there. The runner's sources are tools/mongo-java-server.
 */
const SOURCE_DIR = fileURLToPath(new URL("../../../tools/mongo-java-server/", import.meta.url));
const JAR = "mongo-java-server-runner.jar";
const IGNORED_INDEX = /adding secondary index with keys .* is not yet implemented\. ignoring$/;

export interface RunningMongoJavaServer {
  uri: string;
  /** Its process (a test may stop it with SIGSTOP). */
  pid: number;
  stop(): Promise<void>;
}

/** Starts the server on a free loopback port; it exits by itself if this process dies. */
export async function startMongoJavaServer(log: Logger): Promise<RunningMongoJavaServer> {
  const jar = await ensureMongoJavaServerJar(log);
  // A small heap (the suites keep a few thousand documents); the quick compiler only, as the run is short.
  const child = spawn("java", ["-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", jar, "0"], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  readline.createInterface({ input: child.stderr }).on("line", (line) => {
    // It keeps only `_id` and unique indexes; the service's other indexes speed reads up and change no result.
    if (IGNORED_INDEX.test(line)) log.debug({ mongoJavaServer: line }, "mongo-java-server");
    else log.warn({ mongoJavaServer: line }, "mongo-java-server");
  });
  const stop = async () => {
    child.stdin.end();
    await stopProcess(child);
  };
  try {
    const port = await announcedPort(child.stdout);
    const uri = `mongodb://127.0.0.1:${port}/`;
    await waitForMongo(uri, child);
    return { uri, pid: child.pid!, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The port of the runner's first line, `listening on <port>`. */
async function announcedPort(stdout: NodeJS.ReadableStream): Promise<number> {
  for await (const line of readline.createInterface({ input: stdout })) {
    const match = /^listening on (\d+)$/.exec(line);
    if (match) return Number(match[1]);
  }
  throw new Error("mongo-java-server exited before it listened");
}

/**
 * The runner's jar, built with Maven the first time. The cache folder is keyed by a hash of the
 * runner's sources (a version bump in the pom builds again), like the FerretDB build.
 */
async function ensureMongoJavaServerJar(log: Logger): Promise<string> {
  const files = await sourceFiles();
  const hash = createHash("sha256");
  for (const file of files) hash.update(file).update(await readFile(path.join(SOURCE_DIR, file)));
  const cacheRoot = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache");
  const dir = path.join(cacheRoot, "platform-backend", `mongo-java-server-${hash.digest("hex").slice(0, 12)}`);
  const jar = path.join(dir, JAR);
  if (existsSync(jar)) return jar;

  log.info({ dir }, "building mongo-java-server with Maven, once (a minute on a fresh machine)");
  const started = Date.now();
  const progress = setInterval(
    () => log.info({ seconds: Math.round((Date.now() - started) / 1000) }, "still building mongo-java-server"),
    15_000,
  );
  // Built in a folder of this process's own and renamed, so a concurrent start never runs a half-written jar.
  const work = path.join(dir, `build-${process.pid}`);
  try {
    await rm(work, { recursive: true, force: true });
    await mkdir(work, { recursive: true });
    for (const file of files) await cp(path.join(SOURCE_DIR, file), path.join(work, file), { recursive: true });
    await runCommand("mvn", ["--batch-mode", "--quiet", "-Dstyle.color=never", "package"], {
      cwd: work,
      onLine: (line) => {
        // Maven 3.8 prints colour resets even in batch mode.
        const text = stripVTControlCharacters(line).trim();
        if (text) log.info({ mvn: text }, "building mongo-java-server");
      },
    });
    await rename(path.join(work, "target", JAR), jar);
  } finally {
    clearInterval(progress);
    await rm(work, { recursive: true, force: true }).catch((err: unknown) =>
      log.warn({ err, dir: work }, "could not remove the mongo-java-server build folder"),
    );
  }
  log.info({ seconds: Math.round((Date.now() - started) / 1000) }, "mongo-java-server built");
  return jar;
}

/** The runner's source files, relative to SOURCE_DIR, in a stable order (a stray target/ is not a source). */
async function sourceFiles(): Promise<string[]> {
  const entries = await readdir(SOURCE_DIR, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(SOURCE_DIR, path.join(entry.parentPath, entry.name)))
    .filter((file) => !file.startsWith(`target${path.sep}`))
    .sort();
}
