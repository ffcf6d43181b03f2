import { performance } from "node:perf_hooks";
import type { Db } from "mongodb";
import { connectDatabase } from "../../src/db/database.js";
import { projectIdRange } from "../../src/db/ids.js";
import type { QueuedEvent } from "../../src/events/queue/entries.js";
import { unpackEvents } from "../../src/events/queue/segment-store.js";
import { dayOf } from "../../src/events/rollup-keys.js";
import { partnerKey } from "../../src/players/rules/identity-key.js";
import { PLAYER_PROFILES } from "../../src/players/storage/profile-store.js";
import { round, type BenchService } from "./support.js";

/** The baseline's deadline: it reads every raw event, far past the service's. */
const RAW_DEADLINE_MS = 600_000;

/** Per "tag/name/day": events, and the distinct players who sent them. */
export type SplitCounts = Map<string, { events: number; players: number }>;

export interface RawSplitQuery {
  projectId: string;
  from: string;
  to: string;
  tags: readonly string[];
}

/**
 * Every raw event the service applied for the project (event_raw, by the project's `_id` range; no aggregation:
 * FerretDB 1.24 answers `$project` of a path with the literal string), a stored document's at a time.
 */
export async function* appliedEvents(db: Db, projectId: string): AsyncGenerator<QueuedEvent[]> {
  const docs = db.collection<{ _id: string; events: string }>("event_raw").find({ _id: projectIdRange(projectId) });
  for await (const doc of docs) yield unpackEvents(doc.events);
}

/**
 * The split by tag answered the way a service without sets would: every raw event of the project read
 * (appliedEvents), joined in memory with the profiles' tags as of now, read by a find.
 */
export async function rawSplit(db: Db, query: RawSplitQuery): Promise<{ ms: number; counts: SplitCounts }> {
  const started = performance.now();
  const wanted = new Set(query.tags);
  const tagsOf = new Map<string, string[]>();
  const profiles = db
    .collection(PLAYER_PROFILES)
    .find({ project_id: query.projectId }, { projection: { identity_key: 1, tags: 1 } });
  for await (const doc of profiles) {
    tagsOf.set(
      doc.identity_key,
      (doc.tags as string[]).filter((tag) => wanted.has(tag)),
    );
  }
  const slots = new Map<string, { events: number; players: Set<string> }>();
  for await (const events of appliedEvents(db, query.projectId)) {
    for (const event of events) {
      const day = dayOf(event.t);
      if (day < query.from || day > query.to || event.u === null) continue;
      const player = partnerKey(event.u);
      for (const tag of tagsOf.get(player) ?? []) {
        const key = `${tag}/${event.n}/${day}`;
        let slot = slots.get(key);
        if (!slot) slots.set(key, (slot = { events: 0, players: new Set() }));
        slot.events++;
        slot.players.add(player);
      }
    }
  }
  const counts: SplitCounts = new Map();
  for (const [key, slot] of slots) counts.set(key, { events: slot.events, players: slot.players.size });
  return { ms: performance.now() - started, counts };
}

interface TrendsBody {
  series: { name: string; tag?: string; points: { date: string; events?: number; players?: number }[] }[];
}

/** The raw split 3 times on a client of its own; each answer must equal the service's `trends` answer. */
export async function rawBaseline(options: { bench: BenchService; query: RawSplitQuery; trends: TrendsBody }) {
  const { bench, query, trends } = options;
  const baseline = await connectDatabase(bench.databaseUri, bench.config.dbName, { timeoutMs: RAW_DEADLINE_MS });
  const runs: number[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const { ms, counts } = await rawSplit(baseline.db, query);
      const differences = splitDifferences(trends, counts);
      if (differences.length > 0) {
        throw new Error(`the raw split disagrees with Trends: ${differences.slice(0, 5).join("; ")}`);
      }
      runs.push(ms);
    }
  } finally {
    await baseline.close();
  }
  runs.sort((a, b) => a - b);
  return { p50_ms: round(runs[1]), runs_ms: runs.map((x) => round(x)) };
}

/** The differences between the Trends split and the raw answer (empty when they agree). */
export function splitDifferences(trends: TrendsBody, raw: SplitCounts): string[] {
  const seen = new Set<string>();
  const differences: string[] = [];
  for (const series of trends.series) {
    for (const point of series.points) {
      const key = `${series.tag}/${series.name}/${point.date}`;
      const events = point.events ?? 0;
      const players = point.players ?? 0;
      if (events === 0 && players === 0) continue;
      seen.add(key);
      const expected = raw.get(key);
      if (expected?.events !== events || expected.players !== players) {
        differences.push(`${key}: trends ${events}/${players}, raw ${expected?.events ?? 0}/${expected?.players ?? 0}`);
      }
    }
  }
  for (const [key, slot] of raw)
    if (!seen.has(key)) differences.push(`${key}: trends 0/0, raw ${slot.events}/${slot.players}`);
  return differences;
}
