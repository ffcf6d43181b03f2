import { performance } from "node:perf_hooks";
import { PLAYER_PROFILES, profileDocument } from "../src/players/profile-store.js";
import { PLAYER_TAGS, tagDocument } from "../src/players/tag-store.js";
import { measure, round, startBenchService, type BenchService } from "./support.js";

/**
 * players/update throughput in 100-entry calls, and players/search and
 * players/tags latency over 100,000 profiles, each next to the bare driver
 * doing the nearest equivalent on the same database in the same run.
 */
const ENTRIES_PER_CALL = 100;
const TAG_POOL_SIZE = 200;

/**
 * FerretDB 1.24 (SQLite) pushes little but `_id` down to its indexes, so a
 * tag search scans every profile of the collection; measured here at about
 * 0.1 s per 1,000 profiles. On it the run uses 5,000 profiles and fewer calls
 * to stay within minutes; on MongoDB, the 100,000 of the issue.
 * BENCH_PLAYERS_PROFILES overrides either.
 */
function sizes(isFerretDb: boolean) {
  return {
    profiles: Number(process.env.BENCH_PLAYERS_PROFILES ?? (isFerretDb ? 5_000 : 100_000)),
    updateCalls: isFerretDb ? 6 : 20,
    queries: isFerretDb ? 20 : 100,
  };
}
const TAG_POOL = Array.from({ length: TAG_POOL_SIZE }, (_, i) => `tag_${i}`);

async function createProject(bench: BenchService, gameId: number) {
  const res = await fetch(`${bench.baseUrl}/v1/admin/projects`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": bench.adminKey },
    body: JSON.stringify({ name: `bench ${gameId}`, game_id: gameId }),
  });
  const body = (await res.json()) as any;
  return {
    projectId: body.project.project_id as string,
    privateKey: body.private_key as string,
    publicKey: body.public_key as string,
  };
}

async function post(bench: BenchService, path: string, key: string, body: unknown): Promise<any> {
  const res = await fetch(bench.baseUrl + path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

function tagsOf(i: number): string[] {
  return [TAG_POOL[i % 200], TAG_POOL[(i * 7) % 200], TAG_POOL[(i * 13) % 50]].filter(
    (t, k, all) => all.indexOf(t) === k,
  );
}

/** Profiles in their stored shape, inserted in bulk (the API path is measured separately above). */
async function generateProfiles(bench: BenchService, projectId: string, PROFILES: number): Promise<number> {
  const started = performance.now();
  const profiles = bench.database.db.collection<ReturnType<typeof profileDocument>>(PLAYER_PROFILES);
  const base = Date.now() - PROFILES * 1000;
  for (let from = 0; from < PROFILES; from += 1000) {
    const docs = Array.from({ length: Math.min(1000, PROFILES - from) }, (_, k) => {
      const i = from + k;
      const seen = new Date(base + i * 1000);
      return profileDocument({
        projectId,
        identityKey: `u:gen-${i}`,
        partnerUserId: `gen-${i}`,
        deviceId: null,
        platformUserId: null,
        tags: tagsOf(i),
        traits: new Map<string, string | number | boolean>([
          ["level", i % 100],
          ["region", ["eu", "us", "asia"][i % 3]],
          ["vip", i % 10 === 0],
        ]),
        version: 1,
        firstSeenAt: seen,
        lastSeenAt: seen,
      });
    });
    await profiles.insertMany(docs, { ordered: false });
  }
  const now = new Date();
  await bench.database.db.collection<ReturnType<typeof tagDocument>>(PLAYER_TAGS).insertMany(
    TAG_POOL.map((tag, i) =>
      tagDocument(projectId, {
        id: i + 1,
        tag,
        label: tag,
        category: i % 2 === 0 ? "even" : "odd",
        description: null,
        isHidden: false,
        firstSeenAt: now,
        lastSeenAt: now,
      }),
    ),
  );
  return round((performance.now() - started) / 1000);
}

function progress(step: string, value: unknown): void {
  process.stderr.write(`players bench: ${step} ${JSON.stringify(value)}\n`);
}

export default async function playersBenchmark() {
  const bench = await startBenchService();
  try {
    const db = bench.database.db;
    const { profiles: PROFILES, updateCalls: UPDATE_CALLS, queries: QUERIES } = sizes(bench.database.isFerretDb);
    const writer = await createProject(bench, 910_001);

    // Update: 100 new players a call, three tags and three traits each, then the same players again.
    let call = 0;
    const update = await measure({
      concurrency: 2,
      total: UPDATE_CALLS,
      run: async () => {
        const c = call++ % (UPDATE_CALLS / 2);
        const players = Array.from({ length: ENTRIES_PER_CALL }, (_, k) => {
          const i = c * ENTRIES_PER_CALL + k;
          return {
            partner_user_id: `p-${i}`,
            tags_add: tagsOf(i),
            traits: { level: i % 100, region: "eu" },
            traits_increment: { sessions: 1 },
          };
        });
        const body = await post(bench, "/v1/players/update", writer.publicKey, { players });
        if (body.updated.length !== ENTRIES_PER_CALL) throw new Error(`update: ${JSON.stringify(body.rejected[0])}`);
      },
    });
    const scratch = db.collection<ReturnType<typeof profileDocument>>("bench_bare_profiles");
    let batch = 0;
    const bareInsert = await measure({
      concurrency: 2,
      total: UPDATE_CALLS,
      run: async () => {
        const b = batch++;
        await scratch.insertMany(
          Array.from({ length: ENTRIES_PER_CALL }, (_, k) =>
            profileDocument({
              projectId: "bare",
              identityKey: `u:bare-${b}-${k}`,
              partnerUserId: `bare-${b}-${k}`,
              deviceId: null,
              platformUserId: null,
              tags: tagsOf(k),
              traits: new Map<string, string | number | boolean>([["level", k]]),
              version: 1,
              firstSeenAt: new Date(),
              lastSeenAt: new Date(),
            }),
          ),
        );
      },
    });

    progress("update", update);
    const reader = await createProject(bench, 910_002);
    const generateSeconds = await generateProfiles(bench, reader.projectId, PROFILES);
    progress("generated", generateSeconds);
    const profiles = db.collection(PLAYER_PROFILES);
    const tags = db.collection(PLAYER_TAGS);

    const searchTag = await measure({
      concurrency: 4,
      total: QUERIES,
      run: async (i) =>
        void (await post(bench, "/v1/players/search", reader.privateKey, { tags: [TAG_POOL[i % 200]], page_size: 50 })),
    });
    const bareFindTag = await measure({
      concurrency: 4,
      total: QUERIES,
      run: async (i) => {
        const filter = { project_id: reader.projectId, tags: { $in: [TAG_POOL[i % 200]] } };
        await Promise.all([
          profiles.find(filter).sort({ last_seen_at: -1, identity_key: 1 }).limit(50).toArray(),
          profiles.countDocuments(filter),
        ]);
      },
    });
    const searchTrait = await measure({
      concurrency: 4,
      total: QUERIES,
      run: async (i) =>
        void (await post(bench, "/v1/players/search", reader.privateKey, { traits: { level: i % 100, region: "eu" } })),
    });
    const listTags = await measure({
      concurrency: 4,
      total: QUERIES,
      run: async (i) =>
        void (await post(bench, "/v1/players/tags", reader.privateKey, {
          page: 1 + (i % 4),
          page_size: 50,
          category: "even",
        })),
    });
    const bareFindTags = await measure({
      concurrency: 4,
      total: QUERIES,
      run: async (i) => {
        const filter = { project_id: reader.projectId, category: "even" };
        await Promise.all([
          tags
            .find(filter)
            .sort({ id: 1 })
            .skip((i % 4) * 50)
            .limit(50)
            .toArray(),
          tags.countDocuments(filter),
        ]);
      },
    });

    const entriesPerSec = round(update.ops_per_sec * ENTRIES_PER_CALL);
    const bareDocsPerSec = round(bareInsert.ops_per_sec * ENTRIES_PER_CALL);
    return {
      database: bench.database.isFerretDb ? "ferretdb" : "mongodb",
      profiles: PROFILES,
      generate_seconds: generateSeconds,
      update_100_entry_calls: { ...update, entries_per_sec: entriesPerSec },
      baseline_bare_insert_many_100: { ...bareInsert, docs_per_sec: bareDocsPerSec },
      search_by_tag: searchTag,
      search_by_two_traits: searchTrait,
      baseline_bare_find_and_count_by_tag: bareFindTag,
      list_tags_by_category: listTags,
      baseline_bare_find_and_count_tags: bareFindTags,
      ratios: {
        update_vs_bare_insert_throughput: round(entriesPerSec / bareDocsPerSec, 3),
        search_vs_bare_p50: round(searchTag.p50_ms / bareFindTag.p50_ms, 2),
        list_tags_vs_bare_p50: round(listTags.p50_ms / bareFindTags.p50_ms, 2),
      },
    };
  } finally {
    await bench.stop();
  }
}
