import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { once } from "node:events";
import { accessSync, constants, statSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import readline from "node:readline";
import { MongoClient } from "mongodb";

/**
 * Another process already runs a database on this data folder. One service
 * instance owns an embedded database: FerretDB does not isolate concurrent
 * updates between processes, so a second writer would lose writes silently.
 */
export class DatabaseInUseError extends Error {
  constructor(dataDir: string, detail: string) {
    super(
      `the embedded database in ${dataDir} is in use by another process (${detail}). ` +
        "One service instance owns an embedded database: stop the other instance, give this one its own DATA_DIR, " +
        "or run several instances on MongoDB (MONGODB_URI).",
    );
    this.name = "DatabaseInUseError";
  }
}

/** No database can be had with what this machine has; the message says what would do. */
export class NoDatabaseError extends Error {
  override name = "NoDatabaseError";
}

/** The executable file `command` names on PATH, as a shell would find it. */
export function findOnPath(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    const candidate = path.join(dir || ".", command);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** A TCP port that was free on loopback a moment ago. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as net.AddressInfo;
  server.close();
  await once(server, "close");
  return port;
}

/** Runs a command to completion, handing each line of its output to `onLine`; rejects on a non-zero exit. */
export async function runCommand(
  command: string,
  args: string[],
  options: SpawnOptions & { onLine: (line: string) => void },
): Promise<void> {
  const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  for (const stream of [child.stdout, child.stderr]) {
    if (stream) readline.createInterface({ input: stream }).on("line", options.onLine);
  }
  const [code] = (await once(child, "close")) as [number | null];
  if (code !== 0) throw new Error(`${command} ${args.join(" ")} exited with ${code}`);
}

/**
 * Resolves once a MongoDB-compatible server answers a ping at `uri`; rejects if `child` exits (or could not be
 * started) first, or after 60 s.
 */
export async function waitForMongo(uri: string, child: ChildProcess): Promise<void> {
  let failure: string | undefined;
  const onExit = (code: number | null) =>
    (failure ??= `database process exited with ${code} before accepting connections`);
  const onError = (error: Error) => (failure ??= `database process could not be started: ${error.message}`);
  child.once("exit", onExit);
  child.once("error", onError);
  const deadline = Date.now() + 60_000;
  try {
    for (;;) {
      if (failure !== undefined) throw new Error(failure);
      // Each attempt is bounded by the driver's server selection timeout, so this loop needs no sleep.
      const client = new MongoClient(uri, { serverSelectionTimeoutMS: 500, directConnection: true });
      try {
        await client.db("admin").command({ ping: 1 });
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
      } finally {
        await client.close();
      }
    }
  } finally {
    child.off("exit", onExit);
    child.off("error", onError);
  }
}

/** Sends SIGTERM and waits for the exit; SIGKILL after 10 s. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}
