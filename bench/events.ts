import { performance } from "node:perf_hooks";
import { throwIfRefused } from "../src/db/engine.js";
import type { QueuedEvent } from "../src/events/queue/entries.js";
import { dayOf } from "../src/events/rollup-keys.js";
import { EventNameStore } from "../src/events/rollups/event-name-store.js";
import { Registration } from "../src/players/rounds/registration.js";
import { partnerKey } from "../src/players/rules/identity-key.js";
import { profileDocument, type ProfileDoc } from "../src/players/storage/profile-document.js";
import { PLAYER_PROFILES } from "../src/players/storage/profile-store.js";
import { rawBaseline } from "./parts/events-raw.js";
import { BATCH, generatorStores, historyWriter, numberPlayers, writeMemberSets } from "./parts/stored-players.js";
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

/** The tags of generated player i: tag t on every (t + 2)-th player. */
export const tagsOfPlayer = (tags: readonly string[], i: number) => tags.filter((_, t) => (i + t) % (t + 2) === 0);

/**
 * 1,000,000 events in their stored shapes, written by the service's own stores: the players' numbers, profiles with
 * tags (a quarter with the trait `tier`), their sets and the trait's column, the tags, key and names registered, each
 * day's activity chunks and raw events (segment 1 of the queue, applied).
 */
export async function generate(bench: BenchService, gameId = 9_100_002): Promise<Generated> {
  const p = await createBenchProject(bench, gameId);
  const { database } = bench;
  const { db } = database;
  const { engine, sets, players: stores } = generatorStores(database);
  const now = Date.now();
  const days = Array.from({ length: DAYS }, (_, d) => dayOf(new Date(now - (DAYS - d) * 86_400_000)));
  const tags = Array.from({ length: TAGS }, (_, i) => `tag_${i}`);
  const names = Array.from({ length: NAMES }, (_, i) => `event_${i}`);
  const traitsOf = (i: number) => new Map(i % 4 === 0 ? [["tier", "gold"]] : []);
  const need = { index: 0, tags, keys: ["tier"], labels: new Map(tags.map((tag) => [tag, tag])) };
  const refused = await new Registration(stores).register(p.projectId, [need], new Date());
  if (refused.size > 0) throw new Error(`registration refused: ${[...refused.values()].join(", ")}`);
  await new EventNameStore(db, { limit: 1000, waitLimitMs: 10_000, soleWriter: true }).admit(p.projectId, names);
  const players = Array.from({ length: PLAYERS }, (_, i) => `player_${i}`);
  await numberPlayers(sets.numbers, p.projectId, players.map(partnerKey));
  const profiles = players.map((player, i) =>
    profileDocument({
      projectId: p.projectId,
      identityKey: partnerKey(player),
      partnerUserId: player,
      deviceId: null,
      platformUserId: null,
      tags: tagsOfPlayer(tags, i),
      traits: traitsOf(i),
      version: 1,
      firstSeenAt: new Date(),
      lastSeenAt: new Date(),
      number: i,
    }),
  );
  const profileStore = db.collection<ProfileDoc>(PLAYER_PROFILES);
  for (let from = 0; from < PLAYERS; from += BATCH) {
    const batch = profiles.slice(from, from + BATCH).map((document) => ({ insertOne: { document } }));
    throwIfRefused("profiles", await engine.writeAll(profileStore, batch));
  }
  await writeMemberSets(sets, p.projectId, PLAYERS, (i) => ({ tags: tagsOfPlayer(tags, i), traits: traitsOf(i) }));
  // Each day's events: per name each player's count (the activity), per player the raw events.
  const activity = days.map(() => new Map(names.map((name) => [name, new Map<number, number>()])));
  const raw = days.map(() => new Map<string, QueuedEvent[]>());
  const dailyPlayers: string[] = [];
  for (const [i, player] of players.entries()) {
    const daily = i % 1000 === 0;
    if (daily) dailyPlayers.push(player);
    for (let k = 0; k < EVENTS_PER_PLAYER; k++) {
      const d = daily ? k % DAYS : (i * 7 + k * 13) % DAYS;
      const name = names[(i + k) % NAMES];
      const counts = activity[d].get(name)!;
      counts.set(i, (counts.get(i) ?? 0) + 1);
      const event = { n: name, u: player, d: null, t: new Date(`${days[d]}T12:00:00Z`), i: null, p: null };
      (raw[d].get(player) ?? raw[d].set(player, []).get(player)!).push(event);
    }
  }
  const history = await historyWriter(database, engine, sets, p.projectId);
  for (const [d, day] of days.entries()) {
    const byName = new Map(
      [...activity[d]].map(([name, counts]) => [
        name,
        [...counts].map(([number, events]) => ({ number, events, sums: new Map<string, number>() })),
      ]),
    );
    await history.day(day, byName);
    const batches = [...raw[d]].map(([player, events]) => ({ day, identityKey: partnerKey(player), events }));
    await history.raw(batches);
  }
  return { ...p, from: days[0], to: days.at(-1)!, tags, dailyPlayers };
}

/** Trends by filters of two sets: the first run reads the sets into the instance's cache, then 50 runs each. */
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

export default async function eventsBench() {
  // A 2-core machine shared with other work: the default 2 s database deadline turned queued writes into 503s.
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
    const traitFilter = await load({ ...common, runs: 50, body: { ...range, traits: { tier: "gold" } } });
    log("trait filter", traitFilter);
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
        trait_filter: traitFilter,
        raw_split: raw,
        speedup_p50: round(raw.p50_ms / split.p50_ms),
      },
      tag_change_30_active_days: tagChange,
    };
  } finally {
    await bench.stop();
  }
}
