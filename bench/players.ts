import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { throwIfRefused } from "../src/db/engine.js";
import { Registration } from "../src/players/rounds/registration.js";
import { partnerKey } from "../src/players/rules/identity-key.js";
import { profileDocument, type ProfileDoc } from "../src/players/storage/profile-document.js";
import { PLAYER_PROFILES } from "../src/players/storage/profile-store.js";
import { countWrites, rewrittenByUpdates } from "./parts/players-commands.js";
import { BATCH, generatorStores, numberPlayers, writeMemberSets } from "./parts/stored-players.js";
import { round, runLoadProcess, startBenchService, type BenchService } from "./parts/support.js";

/**
 * Search latency by one tag, by two tags (all) and by a tag and a trait over
 * 100,000 profiles with tags of 10,000 members, and tag-listing latency over
 * 500 tags; players/update throughput (100-entry calls, 8 in flight, new then
 * existing players) in a project of its own players and in the 100,000-profile
 * one, the ratio of the two, and how long each pass left something unsettled;
 * each next to a bare-driver baseline of the same run. Then issue 46's import:
 * 100,000 new tagged players at full speed into a project of their own, its
 * refusals and its rate per 10,000. The service runs in this process; the load
 * generator (bench/parts/players-load.ts) in another.
 */
const PROFILES = Number(process.env.BENCH_PLAYERS_PROFILES ?? 100_000);
const UPDATE_CALLS = Number(process.env.BENCH_PLAYERS_UPDATE_CALLS ?? 200);
/** Issue 46's import: new tagged players into a project of their own, 100 a call, 8 in flight. */
const IMPORT_PLAYERS = Number(process.env.BENCH_PLAYERS_IMPORT ?? 100_000);
const QUERIES = 100;
/** Tag A: every 10th profile; tag B: every 20th plus those at 11 mod 20; A and B share every 20th. */
export const TAG_A = "cohort_a";
export const TAG_B = "cohort_b";
const OTHER_TAGS = Array.from({ length: 498 }, (_, i) => `tag_${i}`);
const LOAD = fileURLToPath(new URL("./parts/players-load.ts", import.meta.url));

function tagsOf(i: number): string[] {
  const tags = [OTHER_TAGS[i % 498], OTHER_TAGS[(i * 7) % 498], OTHER_TAGS[(i * 13) % 97]];
  if (i % 10 === 0) tags.push(TAG_A);
  if (i % 20 === 0 || i % 20 === 11) tags.push(TAG_B);
  return [...new Set(tags)];
}

async function createProject(bench: BenchService, gameId: number) {
  const res = await fetch(`${bench.baseUrl}/v1/admin/projects`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": bench.adminKey },
    body: JSON.stringify({ name: `bench ${gameId}`, game_id: gameId }),
  });
  const body = (await res.json()) as any;
  return { projectId: body.project.project_id as string, privateKey: body.private_key, publicKey: body.public_key };
}

/** The traits of generated profile i: `region` a third each of eu, us and asia. */
const traitsOf = (i: number) =>
  new Map<string, string | number | boolean>([
    ["level", i % 100],
    ["region", ["eu", "us", "asia"][i % 3]],
  ]);

/**
 * `profiles` profiles (`u:gen-<i>`, tags from tagsOf, number i) in their stored shape, the 500 tags and two trait
 * keys registered, then their numbers, the profiles' and tags' sets and the traits' columns as first writes leave them.
 */
export async function generate(bench: BenchService, projectId: string, profiles = PROFILES) {
  const { database } = bench;
  const { engine, sets, players: stores } = generatorStores(database);
  const started = performance.now();
  const tags = [TAG_A, TAG_B, ...OTHER_TAGS];
  const need = { index: 0, tags, keys: ["level", "region"], labels: new Map(tags.map((tag) => [tag, tag])) };
  const refused = await new Registration(stores).register(projectId, [need], new Date());
  if (refused.size > 0) throw new Error(`registration refused: ${[...refused.values()].join(", ")}`);
  await numberPlayers(
    sets.numbers,
    projectId,
    Array.from({ length: profiles }, (_, i) => partnerKey(`gen-${i}`)),
  );
  const base = Date.now() - profiles * 1000;
  for (let from = 0; from < profiles; from += BATCH) {
    const docs = Array.from({ length: Math.min(BATCH, profiles - from) }, (_, k) => {
      const i = from + k;
      const seen = new Date(base + i * 1000);
      return profileDocument({
        projectId,
        identityKey: partnerKey(`gen-${i}`),
        partnerUserId: `gen-${i}`,
        deviceId: null,
        platformUserId: null,
        tags: tagsOf(i),
        traits: traitsOf(i),
        version: 1,
        firstSeenAt: seen,
        lastSeenAt: seen,
        number: i,
      });
    });
    throwIfRefused(
      "profiles",
      await engine.writeAll(
        database.db.collection<ProfileDoc>(PLAYER_PROFILES),
        docs.map((document) => ({ insertOne: { document } })),
      ),
    );
  }
  const inserted = performance.now();
  await writeMemberSets(sets, projectId, profiles, (i) => ({ tags: tagsOf(i), traits: traitsOf(i) }));
  return {
    insert_seconds: round((inserted - started) / 1000),
    sets_seconds: round((performance.now() - inserted) / 1000),
  };
}

/** Runs the load generator (players-load.ts) to its end: what it printed. */
const load = (task: object): Promise<any> => runLoadProcess(LOAD, task);

/** The service's memory once the load is over (it runs in this process): its cache of sets, and the whole process. */
async function memoryOf(bench: BenchService) {
  global.gc?.();
  const metrics = await (await fetch(`${bench.baseUrl}/metrics`)).text();
  const cache = Number(/^platform_set_cache_bytes (\S+)$/m.exec(metrics)?.[1] ?? NaN);
  const { rss, heapUsed } = process.memoryUsage();
  const mb = (bytes: number) => round(bytes / 2 ** 20, 1);
  return { set_cache_mb: mb(cache), heap_used_mb: mb(heapUsed), rss_mb: mb(rss) };
}

export default async function playersBenchmark() {
  // A 2-core machine shared with other work: the default 2 s database deadline turned queued writes into 503s.
  const bench = await startBenchService({ DB_TIMEOUT_MS: "10000" });
  try {
    const writer = await createProject(bench, 910_001);
    const reader = await createProject(bench, 910_002);
    const importer = await createProject(bench, 910_003);
    process.stderr.write(`players bench: generating ${PROFILES} profiles\n`);
    const generated = await generate(bench, reader.projectId);
    process.stderr.write(`players bench: generated ${JSON.stringify(generated)}; running the load\n`);
    const writes = countWrites(bench);
    const rewritten = rewrittenByUpdates(bench, {
      [writer.projectId]: "small",
      [reader.projectId]: "large",
      [importer.projectId]: "import",
    });
    const result = await load({
      baseUrl: bench.baseUrl,
      mongodbUri: bench.databaseUri,
      dbName: bench.database.db.databaseName,
      writer,
      reader,
      importer,
      importPlayers: IMPORT_PLAYERS,
      updateCalls: UPDATE_CALLS,
      queries: QUERIES,
      profiles: PROFILES,
      searchTagA: TAG_A,
      searchTagB: TAG_B,
      tagPool: OTHER_TAGS.slice(0, 200),
      largeTags: [TAG_A, TAG_B],
      databasePid: bench.databasePid(),
    });
    writes.stop();
    const rewrittenBytes = await rewritten();
    const memory = await memoryOf(bench);
    const bareNew = result.bare_upserts.fresh.ops_per_sec;
    const bareExisting = result.bare_upserts.existing.ops_per_sec;
    const entries = 4 * UPDATE_CALLS * 100 + IMPORT_PLAYERS;
    const rate = (project: string, pass: string) => result.update[project]?.[pass]?.entries_per_sec ?? 0;
    return {
      database: bench.database.isFerretDb ? "ferretdb" : "mongodb",
      profiles: PROFILES,
      ...generated,
      ...result,
      memory,
      ratios: {
        update_new_vs_bare_upserts: round(rate("small", "fresh") / bareNew, 3),
        update_existing_vs_bare_upserts: round(rate("small", "existing") / bareExisting, 3),
        update_new_large_vs_small: round(rate("large", "fresh") / rate("small", "fresh"), 3),
        update_existing_large_vs_small: round(rate("large", "existing") / rate("small", "existing"), 3),
      },
      targets: {
        update_ratio_at_least: 0.5,
        update_large_vs_small_at_least: 0.8,
        settled_seconds_at_most: 5,
        search_p50_ms_at_most: 10,
        list_tags_p50_ms_at_most: 20,
        import_refused_calls: 0,
        import_last_vs_first_10000: "within noise of 1",
      },
      // Everything the service sent while the load ran (updates, searches, listings), per update entry.
      diagnostics: {
        write_commands: writes.counts.commands,
        write_statements_per_update_entry: round(writes.counts.statements / entries, 2),
        find_commands: writes.counts.reads,
        commands: writes.byCommand,
        rewritten_by_updates: rewrittenBytes,
      },
    };
  } finally {
    await bench.stop();
  }
}
