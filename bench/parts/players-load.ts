// The load generator of `npm run bench -- players`, run in a process of its own so that its CPU is not the
// service's. It reads its task from argv[2] (JSON), drives the service over HTTP and the database with a driver
// of its own for the baselines, and prints its figures as JSON on stdout.
import { MongoClient } from "mongodb";
import { measure, processCpuMs, round } from "./support.js";

interface Task {
  baseUrl: string;
  mongodbUri: string;
  dbName: string;
  /** A project of only what the update load writes, and the generated one (`profiles` of them) it then writes into. */
  writer: { projectId: string; publicKey: string };
  reader: { projectId: string; privateKey: string; publicKey: string };
  /** A project of only the import's players, and how many it imports (a multiple of 10,000). */
  importer: { publicKey: string };
  importPlayers: number;
  updateCalls: number;
  queries: number;
  /** Profiles generated in the reader's project (`gen-0` …). */
  profiles: number;
  searchTagA: string;
  searchTagB: string;
  /** Tags the update load gives (200, registered in the generated project), and one of the large tags each. */
  tagPool: string[];
  largeTags: string[];
  /** The embedded engine's process, whose CPU a pass of updates costs (absent with MONGODB_URI). */
  databasePid?: number;
}

const ENTRIES_PER_CALL = 100;
const task = JSON.parse(process.argv[2]) as Task;

async function post(path: string, key: string, body: unknown): Promise<any> {
  const res = await fetch(task.baseUrl + path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

const pool = task.tagPool;
const tagsOf = (i: number) => [
  ...new Set([pool[i % 200], pool[(i * 7) % 200], pool[(i * 13) % 50], task.largeTags[i % task.largeTags.length]]),
];

/**
 * Until what the service does behind its answers is done: how long until no round's completion runs in the
 * background (`settled_seconds`: a round's sets are written before its answer, unless a write failed), and until the
 * event queue is drained too (`drained_seconds`), from its /metrics and /readyz.
 */
async function drained(): Promise<{ settled_seconds: number; drained_seconds: number }> {
  const started = performance.now();
  const seconds = () => round((performance.now() - started) / 1000, 2);
  let settled: number | undefined;
  for (;;) {
    const metrics = await (await fetch(`${task.baseUrl}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(metrics)?.[1] ?? 0);
    const ready = (await (await fetch(`${task.baseUrl}/readyz`)).json()) as { events?: { queue_depth: number } };
    const behind = value("platform_player_completions_running");
    if (behind === 0) settled ??= seconds();
    if (behind + (ready.events?.queue_depth ?? 1) === 0)
      return { settled_seconds: settled!, drained_seconds: seconds() };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * 100-entry calls, 8 in flight, over `updateCalls * 100` players of the project: the first pass creates them, the
 * second updates them. Each pass starts once what the one before left behind is done, and reports how long its own
 * took after its last answer.
 */
async function updates(publicKey: string) {
  const run = (i: number) =>
    post("/v1/players/update", publicKey, {
      players: Array.from({ length: ENTRIES_PER_CALL }, (_, k) => {
        const n = i * ENTRIES_PER_CALL + k;
        return {
          partner_user_id: `p-${n}`,
          tags_add: tagsOf(n),
          traits: { level: n % 100, region: "eu" },
          traits_increment: { sessions: 1 },
        };
      }),
    }).then((body) => {
      if (body.updated.length !== ENTRIES_PER_CALL) throw new Error(`update: ${JSON.stringify(body.rejected[0])}`);
    });
  const pass = async () => {
    const engineBefore = processCpuMs(task.databasePid);
    const measured = await measure({ concurrency: 8, total: task.updateCalls, run });
    const engineAfter = processCpuMs(task.databasePid);
    const engine = engineBefore === null || engineAfter === null ? null : engineAfter - engineBefore;
    return {
      ...measured,
      entries_per_sec: round(measured.ops_per_sec * ENTRIES_PER_CALL),
      // The engine's CPU while the calls ran (what they wrote), per entry.
      engine_cpu_ms_per_entry: engine === null ? null : round(engine / (task.updateCalls * ENTRIES_PER_CALL), 3),
      ...(await drained()),
    };
  };
  await drained();
  return { fresh: await pass(), existing: await pass() };
}

/** The import's rate is read over slices of this many players: the first slice's beside each later one's. */
const IMPORT_SLICE = 10_000;

/**
 * Issue 46's import: `importPlayers` new tagged players at full speed (100 a call, 8 in flight), as a studio brings
 * its player base over. A refused call is counted, not retried; the rate is read per slice of 10,000 players, from
 * the times the calls answered.
 */
async function importLoad(publicKey: string) {
  const calls = task.importPlayers / ENTRIES_PER_CALL;
  const answeredAt: number[] = [];
  const refused: Record<string, number> = {};
  let firstRefusal: string | undefined;
  const started = performance.now();
  const run = async (i: number) => {
    const res = await fetch(`${task.baseUrl}/v1/players/update`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": publicKey },
      body: JSON.stringify({
        players: Array.from({ length: ENTRIES_PER_CALL }, (_, k) => {
          const n = i * ENTRIES_PER_CALL + k;
          return { partner_user_id: `import-${n}`, tags_add: tagsOf(n), traits: { level: n % 100 } };
        }),
      }),
    });
    const body = await res.text();
    const updated = res.status === 200 ? (JSON.parse(body) as { updated: unknown[] }).updated.length : 0;
    if (updated !== ENTRIES_PER_CALL) {
      refused[res.status] = (refused[res.status] ?? 0) + 1;
      firstRefusal ??= `${res.status} ${body.slice(0, 300)}`;
    }
    answeredAt.push(performance.now() - started);
    // Each slice as it ends, on stderr: a long import shows its course before it ends.
    if (answeredAt.length % (IMPORT_SLICE / ENTRIES_PER_CALL) === 0) {
      const players = answeredAt.length * ENTRIES_PER_CALL;
      process.stderr.write(
        `players import: ${players} players in ${round(answeredAt.at(-1)! / 1000)} s, ${JSON.stringify(refused)} refused\n`,
      );
    }
  };
  const measured = await measure({ concurrency: 8, total: calls, run });
  const perSlice = IMPORT_SLICE / ENTRIES_PER_CALL;
  const slices = Array.from({ length: calls / perSlice }, (_, s) => {
    const [from, to] = [s === 0 ? 0 : answeredAt[s * perSlice - 1], answeredAt[(s + 1) * perSlice - 1]];
    return round(IMPORT_SLICE / ((to - from) / 1000));
  });
  return {
    players: task.importPlayers,
    entries_per_sec: round(measured.ops_per_sec * ENTRIES_PER_CALL),
    p50_ms: measured.p50_ms,
    p99_ms: measured.p99_ms,
    refused_calls: refused,
    ...(firstRefusal !== undefined && { first_refusal: firstRefusal }),
    first_10000_per_sec: slices[0],
    slices_of_10000_per_sec: slices,
    last_vs_first_10000: round(slices.at(-1)! / slices[0], 3),
    ...(await drained()),
  };
}

/** The update load, or what stopped it (reported, not fatal). */
const updatesOrError = (publicKey: string) => updates(publicKey).catch((error: unknown) => ({ error: String(error) }));

/** The baseline: bare `updateOne` upserts by `_id`, 16 callers, of documents shaped like profiles: new, then existing. */
async function bareUpserts(client: MongoClient) {
  const collection = client.db(task.dbName).collection<any>("bench_bare_profiles");
  const total = task.updateCalls * ENTRIES_PER_CALL;
  const run = (i: number) =>
    collection
      .updateOne(
        { _id: `bare/u:p-${i}` },
        {
          $set: { tags: tagsOf(i), traits: { level: i % 100, region: "eu" }, last_seen_at: new Date() },
          $inc: { version: 1 },
        },
        { upsert: true },
      )
      .then(() => undefined);
  return {
    fresh: await measure({ concurrency: 16, total, run }),
    existing: await measure({ concurrency: 16, total, run }),
  };
}

async function reads(client: MongoClient) {
  const { privateKey, projectId } = task.reader;
  const search = (body: object) => async () => {
    const answer = await post("/v1/players/search", privateKey, { page_size: 50, ...body });
    if (answer.players.length !== 50) throw new Error(`search answered ${answer.players.length} players`);
  };
  const profiles = client.db(task.dbName).collection<any>("player_profiles");
  return {
    searchOneTag: await measure({ concurrency: 1, total: task.queries, run: search({ tags: [task.searchTagA] }) }),
    searchTwoTagsAll: await measure({
      concurrency: 1,
      total: task.queries,
      run: search({ tags: [task.searchTagA, task.searchTagB], tags_match: "all" }),
    }),
    // A third of tag A's members are in region "eu" (the generator's traits).
    searchTagAndTrait: await measure({
      concurrency: 1,
      total: task.queries,
      run: search({ tags: [task.searchTagA], traits: { region: "eu" } }),
    }),
    listTags: await measure({
      concurrency: 1,
      total: task.queries,
      run: async () => {
        const answer = await post("/v1/players/tags", privateKey, { page: 1, page_size: 100 });
        if (answer.tags_info.total !== 500) throw new Error(`listing has ${answer.tags_info.total} tags`);
      },
    }),
    bareFindOne: await measure({
      concurrency: 1,
      total: task.queries,
      run: async (i) => void (await profiles.findOne({ _id: `${projectId}/u:gen-${(i * 7919) % task.profiles}` })),
    }),
  };
}

const client = new MongoClient(task.mongodbUri);
await client.connect();
try {
  // Reads first, on the generated profiles alone; an update phase that fails is reported, not fatal.
  const read = await reads(client);
  const bare = await bareUpserts(client);
  // The import into a project of its own; then the same update load into a project of its own players alone, then
  // into the generated one (its large tags).
  const imported = await importLoad(task.importer.publicKey);
  const update = {
    small: await updatesOrError(task.writer.publicKey),
    large: await updatesOrError(task.reader.publicKey),
  };
  process.stdout.write(JSON.stringify({ update, import: imported, bare_upserts: bare, ...read }));
} finally {
  await client.close();
}
