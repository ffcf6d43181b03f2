import { performance } from "node:perf_hooks";
import { batchedWrite, engineOf } from "../src/db/engine.js";
import { cohortMonthId, countsChange, EVERYONE, tagCohort } from "../src/events/rollups/cohort-rollup-store.js";
import { dayOf, monthOf, nameField } from "../src/events/rollup-keys.js";
import type { QueuedEvent } from "../src/events/queue/entries.js";
import { playerRollupId } from "../src/events/rollups/player-rollup.js";
import { SegmentStore } from "../src/events/queue/segment-store.js";
import { profileDocument } from "../src/players/storage/profile-document.js";
import { PLAYER_PROFILES } from "../src/players/storage/profile-store.js";
import { createPlayerStores } from "../src/players/storage/stores.js";
import { PLAYER_TAGS, tagDocument } from "../src/players/storage/tag-store.js";
import { rawBaseline } from "./parts/events-raw.js";
import {
  createBenchProject,
  postJson,
  queueOf,
  round,
  runLoadProcess,
  startBenchService,
  type BenchService,
} from "./parts/support.js";

/**
 * `npm run bench -- events`: ingestion and apply throughput with the lag under
 * sustained load, through the API; then Trends over 30 days of 1,000,000
 * generated events from 20,000 players split by 10 tags, next to the same
 * answer computed from the raw events and profiles in the same run; then the
 * cost of a tag change of a player with 30 active days. The HTTP load comes
 * from a separate process (bench/parts/events-load.ts).
 */
const PLAYERS = Number(process.env.BENCH_EVENTS_PLAYERS ?? 20_000);
const EVENTS_PER_PLAYER = 50;
const DAYS = 30;
const TAGS = 10;
const NAMES = 5;
const INGEST_SECONDS = Number(process.env.BENCH_EVENTS_INGEST_SECONDS ?? 20);
/** The sustained run: events a second from 20,000 players, for this long. */
const SUSTAINED_RATE = 2_000;
const SUSTAINED_SECONDS = Number(process.env.BENCH_EVENTS_SUSTAINED_SECONDS ?? 300);

function log(step: string, value?: unknown): void {
  process.stderr.write(`events bench: ${step}${value === undefined ? "" : ` ${JSON.stringify(value)}`}\n`);
}

/** A task of the load generator (events-load.ts), run in a process of its own: its result. */
export const load = (task: object): Promise<any> => runLoadProcess("bench/parts/events-load.ts", task);

/** Ingestion paced to SUSTAINED_RATE from 20,000 players while the bench samples the lag every second. */
async function sustainedIngestion(bench: BenchService) {
  const p = await createBenchProject(bench, 9_100_003);
  const lags: number[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      lags.push((await queueOf(bench)).lag_seconds);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();
  const ingest = await load({
    kind: "ingest",
    baseUrl: bench.baseUrl,
    key: p.publicKey,
    seconds: SUSTAINED_SECONDS,
    concurrency: 4,
    batch: 100,
    players: 20_000,
    rate: SUSTAINED_RATE,
  });
  // Drained before the next step, which would otherwise be measured beside the worker's backlog.
  while (!((await queueOf(bench)).queue_depth <= 0)) await new Promise((r) => setTimeout(r, 200));
  sampling = false;
  await sampler;
  const measured = lags.filter(Number.isFinite);
  return {
    ingest,
    lag_samples: measured.length,
    lag_p50_seconds: round(measured.sort((a, b) => a - b)[Math.floor(measured.length / 2)]),
    max_lag_seconds: round(Math.max(...measured)),
    unmeasured_samples: lags.length - measured.length,
  };
}

/** Ingestion as fast as 4 callers go while the bench samples the lag; then the time to drain (apply throughput). */
async function ingestion(bench: BenchService) {
  const p = await createBenchProject(bench, 9_100_001);
  const before = await queueOf(bench);
  const lags: number[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const q = await queueOf(bench);
      lags.push(q.lag_seconds);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();
  const started = performance.now();
  const ingest = await load({
    kind: "ingest",
    baseUrl: bench.baseUrl,
    key: p.publicKey,
    seconds: INGEST_SECONDS,
    concurrency: 4,
    batch: 500,
    players: 2_000,
  });
  const atEnd = await queueOf(bench);
  // A /readyz that missed its deadline under load reports no depth (NaN): that is not drained.
  while (!((await queueOf(bench)).queue_depth <= before.queue_depth)) await new Promise((r) => setTimeout(r, 200));
  const drained = (performance.now() - started) / 1000;
  sampling = false;
  await sampler;
  return {
    ingest,
    apply: { events: ingest.accepted, seconds: round(drained), events_per_sec: Math.round(ingest.accepted / drained) },
    lag_at_end_of_load: atEnd,
    max_lag_seconds: round(Math.max(...lags.filter(Number.isFinite))),
  };
}

interface Generated {
  projectId: string;
  privateKey: string;
  publicKey: string;
  from: string;
  to: string;
  tags: string[];
  /** Players with events on all 30 days (for the tag-change figure). */
  dailyPlayers: string[];
}

/** 1,000,000 events in their stored shapes: raw segments, player rollups, cohort rollups, profiles with tags. */
export async function generate(bench: BenchService): Promise<Generated> {
  const p = await createBenchProject(bench, 9_100_002);
  const { db } = bench.database;
  const now = Date.now();
  const days = Array.from({ length: DAYS }, (_, d) => dayOf(new Date(now - (DAYS - d) * 86_400_000)));
  const tags = Array.from({ length: TAGS }, (_, i) => `tag_${i}`);
  const tagsOf = (i: number) => tags.filter((_, t) => (i + t) % (t + 2) === 0);
  type Month = { cohort: string; month: string; days: Record<string, Record<string, { e: number; p: number }>> };
  const cohortDays = new Map<string, Month>();
  const count = (cohort: string, day: string, field: string, events: number) => {
    // The project's few names fit the month's first document.
    const id = cohortMonthId(p.projectId, cohort, monthOf(day), 0);
    const doc = cohortDays.get(id) ?? { cohort, month: monthOf(day), days: {} };
    cohortDays.set(id, doc);
    const slot = ((doc.days[day] ??= {})[field] ??= { e: 0, p: 0 });
    slot.e += events;
    slot.p += 1;
  };
  const segments = new SegmentStore(db);
  let buffer: QueuedEvent[] = [];
  let seq = 1_000_000;
  const flush = async () => {
    if (buffer.length === 0) return;
    const latest = new Date(Math.max(...buffer.map((e) => e.t.getTime())));
    await segments.insert(
      {
        seq: seq++,
        projectId: p.projectId,
        receivedAt: new Date(),
        count: buffer.length,
        work: { kind: "events", events: buffer },
      },
      latest,
    );
    buffer = [];
  };
  const rollups = [];
  const profiles: ReturnType<typeof profileDocument>[] = [];
  const members = new Map(tags.map((tag) => [tag, [] as string[]]));
  const dailyPlayers: string[] = [];
  for (let i = 0; i < PLAYERS; i++) {
    const player = `player_${i}`;
    const daily = i % 1000 === 0;
    if (daily) dailyPlayers.push(player);
    const perDay: Record<string, Record<string, number>> = {};
    for (let k = 0; k < EVENTS_PER_PLAYER; k++) {
      const day = days[daily ? k % DAYS : (i * 7 + k * 13) % DAYS];
      const name = `event_${(i + k) % NAMES}`;
      const field = nameField(name);
      (perDay[day] ??= {})[field] = (perDay[day][field] ?? 0) + 1;
      buffer.push({ n: name, u: player, d: null, t: new Date(`${day}T12:00:00Z`), i: null, p: null });
      if (buffer.length === 1000) await flush();
    }
    const cohorts = tagsOf(i).map(tagCohort);
    for (const tag of tagsOf(i)) members.get(tag)!.push(`u:${player}`);
    for (const [day, names] of Object.entries(perDay)) {
      for (const [field, events] of Object.entries(names)) {
        for (const cohort of [EVERYONE, ...cohorts]) count(cohort, day, field, events);
      }
    }
    rollups.push({
      _id: playerRollupId(p.projectId, `u:${player}`),
      project_id: p.projectId,
      identity_key: `u:${player}`,
      days: perDay,
      cohorts,
      trait_keys: i % 4 === 0 ? ["tier"] : [],
      folded_into: null,
      last_day: days.at(-1),
      hw: 0,
    });
    profiles.push(
      profileDocument({
        projectId: p.projectId,
        identityKey: `u:${player}`,
        partnerUserId: player,
        deviceId: null,
        platformUserId: null,
        tags: tagsOf(i),
        // A quarter of the players carry the trait: the exact path reads 5,000 histories.
        traits: new Map(i % 4 === 0 ? [["tier", "gold"]] : []),
        version: 1,
        firstSeenAt: new Date(),
        lastSeenAt: new Date(),
      }),
    );
  }
  await flush();
  const insert = (name: string, docs: object[]) =>
    batchedWrite(
      db.collection(name),
      docs.map((document) => ({ insertOne: { document } })),
    );
  await insert("event_player_rollups", rollups);
  await insert(PLAYER_PROFILES, profiles);
  await insert("player_trait_keys", [
    { _id: `${p.projectId}/tier`, project_id: p.projectId, key: "tier", first_seen_at: new Date() },
  ]);
  await insert(
    "event_cohort_rollups",
    [...cohortDays].map(([id, { cohort, month, days }]) => ({
      _id: id,
      project_id: p.projectId,
      cohort,
      month,
      counts: Object.fromEntries(
        Object.entries(days).map(([day, names]) => [
          day,
          Object.fromEntries(Object.entries(names).map(([field, { e, p }]) => [field, countsChange(e, p)])),
        ]),
      ),
      hw: 0,
    })),
  );
  await insert(
    PLAYER_TAGS,
    tags.map((tag, t) =>
      tagDocument(p.projectId, {
        id: t + 1,
        tag,
        label: tag,
        category: null,
        description: null,
        isHidden: false,
        firstSeenAt: new Date(),
        lastSeenAt: new Date(),
      }),
    ),
  );
  // Membership and counts as the rounds that gave the tags leave them (by the store's own write: its layout).
  await createPlayerStores(db, engineOf(bench.database, 0)).membership.apply(
    p.projectId,
    tags.map((tag) => ({ tag, added: members.get(tag)!, removed: [] })),
    { deltas: new Map(tags.map((tag, t) => [t + 1, members.get(tag)!.length])), given: [], now: new Date() },
  );
  return { ...p, from: days[0], to: days.at(-1)!, tags, dailyPlayers };
}

/**
 * Trends by the filters that take the exact path (the cohort's members, then
 * their histories): the first run fills the owner's memory (profiles of the
 * project, members' histories), then 50 runs each.
 */
async function filteredTrends(common: object, range: object, tags: string[]) {
  const filters = {
    two_tags_all: { tags: [tags[0], tags[1]], tags_match: "all" },
    two_tags_any: { tags: [tags[0], tags[1]] },
    tag_and_trait: { tags: [tags[0]], traits: { tier: "gold" } },
    tag_and_tags_none: { tags: [tags[0]], tags_none: [tags[1]] },
  };
  const figures: Record<string, unknown> = {};
  for (const [label, filter] of Object.entries(filters)) {
    const first = await load({ ...common, runs: 1, body: { ...range, ...filter } });
    const runs = await load({ ...common, runs: 50, body: { ...range, ...filter } });
    figures[label] = { first_read_ms: first.p50_ms, ...runs };
  }
  return figures;
}

/** Enables the key's cohorts; times until its backfill is applied and its cohorts answer. */
async function materialise(bench: BenchService, g: Generated, key: string) {
  const started = performance.now();
  const body = { key, materialise: true };
  while (!(await postJson(bench, "/v1/players/traits/update", g.privateKey, body)).ready) {
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { seconds: round((performance.now() - started) / 1000) };
}

export default async function eventsBench() {
  // The exact trait path scans every profile: on FerretDB that outlasts the default 2 s deadline (as in the players bench).
  const bench = await startBenchService({ DB_TIMEOUT_MS: "10000" });
  try {
    log("ingestion under sustained load", { seconds: INGEST_SECONDS });
    const burst = await ingestion(bench);
    log("result", burst);
    log("sustained ingestion", { events_per_sec: SUSTAINED_RATE, players: 20_000, seconds: SUSTAINED_SECONDS });
    const paced = await sustainedIngestion(bench);
    log("result", paced);
    log("generating", { players: PLAYERS, events: PLAYERS * EVENTS_PER_PLAYER });
    const t = performance.now();
    const g = await generate(bench);
    log("generated", { seconds: round((performance.now() - t) / 1000) });
    const range = { from: g.from, to: g.to };
    const common = { kind: "query", baseUrl: bench.baseUrl, key: g.privateKey, path: "/v1/events/trends" };
    const split = await load({ ...common, runs: 50, body: { ...range, split_by: "tags", tags: g.tags } });
    log("trends split by 10 tags", split);
    const filtered = await filteredTrends(common, range, g.tags);
    log("trends filtered (two tags all/any, tag and trait, tag and tags_none)", filtered);
    const everyone = await load({ ...common, runs: 50, body: range });
    log("trends, everyone", everyone);
    const traitQuery = { ...common, body: { ...range, traits: { tier: "gold" } } };
    const traitExact = await load({ ...traitQuery, runs: 3 });
    log("trait filter, exact path", traitExact);
    const backfill = await materialise(bench, g, "tier");
    log("trait materialised", backfill);
    const traitMaterialised = await load({ ...traitQuery, runs: 50 });
    log("trait filter, materialised", traitMaterialised);
    const trends = await postJson(bench, "/v1/events/trends", g.privateKey, {
      ...range,
      split_by: "tags",
      tags: g.tags,
    });
    const raw = await rawBaseline({ bench, query: g, trends });
    log("raw baseline", raw);
    const tagChange = await load({
      kind: "tag-change",
      baseUrl: bench.baseUrl,
      publicKey: g.publicKey,
      privateKey: g.privateKey,
      players: g.dailyPlayers.slice(0, 10),
      range,
    });
    return {
      database: bench.database.isFerretDb ? "ferretdb" : "mongodb",
      burst,
      sustained: paced,
      trends: {
        events: PLAYERS * EVENTS_PER_PLAYER,
        players: PLAYERS,
        days: DAYS,
        split_by_10_tags: split,
        filtered,
        everyone,
        trait_filter: { exact_path: traitExact, materialised: traitMaterialised, backfill_of_5000_holders: backfill },
        raw_split: raw,
        speedup_p50: round(raw.p50_ms / split.p50_ms),
      },
      tag_change_30_active_days: tagChange,
    };
  } finally {
    await bench.stop();
  }
}
