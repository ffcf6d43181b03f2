import { readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { Session } from "node:inspector/promises";
import { setTimeout as delay } from "node:timers/promises";
import type { Profiler } from "node:inspector";
import { SourceMap } from "node:module";
import { MongoClient } from "mongodb";
import { ApplyWorker } from "../src/events/apply/worker.js";
import { createBenchProject, postJson, startBenchService } from "./parts/support.js";

/**
 * `npm run bench -- files-per-request`: how many files of `src` (src/server, the transport every call shares, counted
 * apart) run a function for each request path, and for the work that follows it. V8's precise coverage of this
 * process, which runs the real service on the embedded engine (or MONGODB_URI): counts are taken and reset at the
 * start of each phase, so a phase counts only what ran in it. The apply worker is held before each pass while a
 * call runs (its pass wrapped here, no hook in src), so a call's answer and the apply it wakes count apart. Each path
 * is counted ROUNDS times: the JSON has each round's count and the union of the files. Beside the files, the lines
 * of the functions that ran (TypeScript as written, through tsx's source maps): how much code the path is, wherever
 * it lives. And two bounds of the count with rooms kept (code joins only code of its own folder) and no file over
 * MAX_FILE_LINES: the fewest files the path's files fit in kept whole, and the fewest its lines that ran would fit in
 * were files cut by the paths that run them (bench/README.md).
 */
const SRC = new URL("../src/", import.meta.url).href;
const SERVER = `${SRC}server/`;
const WAIT_LIMIT_MS = 180_000;
const TAG = "bench-files";
/** Each path is counted this many times, a new player each time. */
const ROUNDS = 3;
/** The longest a file of `src` may be (`max-lines` in eslint.config.js). */
const MAX_FILE_LINES = 300;

interface Phase {
  phase: string;
  /** Files of src outside src/server with a function that ran. */
  files: number;
  server_files: number;
  /** Lines of those files inside a function that ran (a function's whole body, whichever branches ran). */
  lines_ran: number;
  /** At least this many files hold those files whole, joined only within their folder: Σ ⌈folder's lines / 300⌉. */
  fewest_whole: number;
  /** At least this many files hold the lines that ran, cut out of their files, within their folder. */
  fewest_cut_by_path: number;
  list: string[];
}

export default async function filesPerRequestBench() {
  const worker = holdWorker();
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Debugger.enable"); // for the scripts' sources
  await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
  const bench = await startBenchService();
  const queue = new MongoClient(bench.databaseUri);
  try {
    const { projectId, publicKey, privateKey } = await createBenchProject(bench, 9_500_001);
    const cursor = queueCursor(queue, bench.config.dbName, projectId);
    const day = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const update = (id: string) =>
      postJson(bench, "/v1/players/update", publicKey, { players: [{ partner_user_id: id, tags_add: [TAG] }] });
    const ingest = (id: string) =>
      postJson(bench, "/v1/events", publicKey, {
        events: [{ name: "level_up", partner_user_id: id, timestamp: `${day}T12:00:00Z` }],
      });
    const trends = () => postJson(bench, "/v1/events/trends", privateKey, { from: day, to: day, tags: [TAG] });
    const drained = async () => {
      const { reserved } = await cursor();
      await until(async () => (await cursor()).applied >= reserved);
    };

    // Once through every path first: what a project's first call loads or registers is not the steady state.
    await update("newcomer-0");
    await ingest("newcomer-0");
    await drained();
    await trends();
    await worker.hold();

    // Files per phase, one entry a round: a timer (the lag measured once a second, a lease renewed) may land in one.
    const phases = new Map<string, Phase[]>();
    const coverage = async (phase: string) => {
      const counted = await phaseOf(session, phase, (await session.post("Profiler.takePreciseCoverage")).result);
      phases.set(phase, [...(phases.get(phase) ?? []), counted]);
      log(counted);
    };
    for (let round = 1; round <= ROUNDS; round++) {
      const player = `newcomer-${round}`;
      await session.post("Profiler.takePreciseCoverage");
      await update(player);
      // Its sets are written before the answer: nothing is queued behind it.
      await coverage("players/update of a new player, to its answer");
      await ingest(player);
      await coverage("POST /v1/events, to its answer");
      worker.release();
      await drained();
      await coverage("  the apply of its segment");
      await worker.hold();
      await session.post("Profiler.takePreciseCoverage");
      await trends();
      await coverage("trends filtered by a tag");
      worker.release();
      await delay(1_000);
      await coverage("an idle service for 1 s (what runs in any phase that waits)");
      await worker.hold();
    }
    return {
      database: bench.database.isFerretDb ? "ferretdb" : "mongodb",
      phases: Object.fromEntries(
        [...phases].map(([phase, rounds]) => [
          phase.trim(),
          {
            files: rounds.map((one) => one.files),
            server_files: rounds.map((one) => one.server_files),
            lines_ran: rounds.map((one) => one.lines_ran),
            fewest_whole: rounds.map((one) => one.fewest_whole),
            fewest_cut_by_path: rounds.map((one) => one.fewest_cut_by_path),
            list: [...new Set(rounds.flatMap((one) => one.list))].sort(),
          },
        ]),
      ),
    };
  } finally {
    worker.restore();
    await session.post("Profiler.stopPreciseCoverage").catch(() => undefined);
    session.disconnect();
    await queue.close();
    await bench.stop();
  }
}

/**
 * Wraps the apply worker's pass so that, while held, a pass waits before it starts; `hold` resolves once the worker
 * waits there (a pass under way has ended).
 */
function holdWorker() {
  const prototype = ApplyWorker.prototype as unknown as { pass(): Promise<boolean> };
  const pass = prototype.pass;
  let gate = Promise.resolve();
  let open = () => {};
  let parked = () => {};
  prototype.pass = async function (this: ApplyWorker) {
    parked();
    await gate;
    return pass.call(this);
  };
  return {
    async hold() {
      gate = new Promise((resolve) => (open = resolve));
      await new Promise<void>((resolve) => (parked = resolve));
    },
    release: () => open(),
    /** Releases the worker and unwraps its pass (`npm run bench` runs other benchmarks in this process). */
    restore() {
      open();
      prototype.pass = pass;
    },
  };
}

/** The project's queue: its counter and cursor, read by a client of the benchmark's own (the service's is monitored by src). */
function queueCursor(client: MongoClient, dbName: string, projectId: string) {
  const docs = client.db(dbName).collection<{ _id: string; seq?: number; applied?: number }>("event_queues");
  return async () => {
    const queue = await docs.findOne({ _id: projectId });
    return { reserved: queue?.seq ?? 0, applied: queue?.applied ?? 0 };
  };
}

async function until(condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + WAIT_LIMIT_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("the service did not finish its work in time");
    await delay(50);
  }
}

async function phaseOf(session: Session, phase: string, scripts: Profiler.ScriptCoverage[]): Promise<Phase> {
  const ran = scripts.filter(
    (script) => script.url.startsWith(SRC) && script.functions.some((fn) => fn.ranges[0].count > 0),
  );
  const outside = ran.filter((script) => !script.url.startsWith(SERVER));
  const list = outside.map((script) => script.url.slice(SRC.length)).sort();
  const byFolder = { whole: new Map<string, number>(), ran: new Map<string, number>() };
  for (const script of outside) {
    const folder = dirname(script.url.slice(SRC.length));
    const whole = (await readFile(new URL(script.url), "utf8")).split("\n").length - 1;
    byFolder.whole.set(folder, (byFolder.whole.get(folder) ?? 0) + whole);
    byFolder.ran.set(folder, (byFolder.ran.get(folder) ?? 0) + (await linesRan(session, script)));
  }
  return {
    phase,
    files: list.length,
    server_files: ran.length - list.length,
    lines_ran: sum(byFolder.ran.values(), (lines) => lines),
    fewest_whole: sum(byFolder.whole.values(), filesFor),
    fewest_cut_by_path: sum(byFolder.ran.values(), filesFor),
    list,
  };
}

/** The fewest files of at most MAX_FILE_LINES that `lines` of one folder fit in. */
const filesFor = (lines: number) => Math.ceil(lines / MAX_FILE_LINES);

function sum(values: Iterable<number>, of: (value: number) => number): number {
  let total = 0;
  for (const value of values) total += of(value);
  return total;
}

/**
 * Lines of the TypeScript source inside the functions of `script` that ran, found through the source map tsx
 * inlines (its output is one line). The module's own body (what ran at import) and esbuild's `__name` are not counted.
 */
async function linesRan(session: Session, script: Profiler.ScriptCoverage): Promise<number> {
  const { scriptSource } = await session.post("Debugger.getScriptSource", { scriptId: script.scriptId });
  const inline = /sourceMappingURL=data:application\/json;base64,([\w+/=]+)/.exec(scriptSource);
  if (!inline) return 0;
  const map = new SourceMap(JSON.parse(Buffer.from(inline[1], "base64").toString("utf8")));
  const lineStarts = [0, ...[...scriptSource.matchAll(/\n/g)].map((match) => match.index + 1)];
  const originalLine = (offset: number): number | undefined => {
    let line = lineStarts.length - 1;
    while (lineStarts[line] > offset) line--;
    return (map.findEntry(line, offset - lineStarts[line]) as { originalLine?: number }).originalLine;
  };
  const lines = new Set<number>();
  for (const fn of script.functions) {
    const [range] = fn.ranges;
    if (range.count === 0 || range.startOffset === 0 || fn.functionName === "__name") continue;
    const first = originalLine(range.startOffset);
    const last = originalLine(range.endOffset - 1);
    if (first === undefined || last === undefined) continue;
    for (let line = first; line <= last; line++) lines.add(line);
  }
  return lines.size;
}

function log({ phase, files, server_files, lines_ran, fewest_whole, fewest_cut_by_path }: Phase): void {
  process.stderr.write(
    `${phase.padEnd(80)} ${String(files).padStart(3)} files (+${server_files} in src/server), ${lines_ran} lines ran, ` +
      `rooms kept: at least ${fewest_whole} files whole, ${fewest_cut_by_path} cut by path\n`,
  );
}
