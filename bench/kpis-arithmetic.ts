import { OwnerMemory } from "../src/db/owner-memory.js";
import type { AsOfNow } from "../src/events/reads/as-of-now.js";
import { HistoryMemory } from "../src/events/rollups/history-memory.js";
import { activePoints } from "../src/events/kpis/active-players.js";
import { bucketCounts } from "../src/events/kpis/bucket-counts.js";
import { retentionTables } from "../src/events/kpis/cohort-retention.js";
import { dayNumber, dayOfNumber } from "../src/events/kpis/periods.js";
import { PlayerActivity } from "../src/events/kpis/player-activity.js";
import { nameField } from "../src/events/rollup-keys.js";
import type { PlayerDirectory } from "../src/events/player-directory.js";
import type { PlayerRollupStore } from "../src/events/rollups/player-rollup-store.js";
import type { CohortFilter } from "../src/events/reads/query.js";

/**
 * `npm run bench -- kpis-arithmetic`: the KPIs' read model and arithmetic alone, in this process, on the kpis
 * bench's shape (BENCH_EVENTS_PLAYERS players, default 20,000, of 50 events of 5 names over 30 days, 10 tags
 * as the events bench gives them): the owner's memory of histories filled, the members as the directory answers
 * them, then per read the CPU time of PlayerActivity.of (its lists unchanged: the model reused; and new lists: the
 * model made again) and the arithmetic of retention, active players and week and month buckets, split by the 10 tags. No service, no database: what the reads cost beyond their commands.
 */
const PLAYERS = Number(process.env.BENCH_EVENTS_PLAYERS ?? 20_000);
const RUNS = Number(process.env.BENCH_KPIS_RUNS ?? 30);
const EVENTS_PER_PLAYER = 50;
const DAYS = 30;
const TAGS = 10;
const NAMES = 5;
const PROJECT = "0123456789abcdef01234567";

function shape() {
  const today = dayNumber(new Date().toISOString().slice(0, 10));
  const days = Array.from({ length: DAYS }, (_, d) => dayOfNumber(today - DAYS + d));
  const tags = Array.from({ length: TAGS }, (_, i) => `tag_${i}`);
  const members = new Map(tags.map((tag) => [tag, [] as string[]]));
  const memory = new HistoryMemory(new OwnerMemory(Number.MAX_SAFE_INTEGER));
  const found = [];
  for (let i = 0; i < PLAYERS; i++) {
    const identityKey = `u:player_${i}`;
    const daily = i % 1000 === 0;
    const perDay: Record<string, Record<string, number>> = {};
    for (let k = 0; k < EVENTS_PER_PLAYER; k++) {
      const day = days[daily ? k % DAYS : (i * 7 + k * 13) % DAYS];
      const field = nameField(`event_${(i + k) % NAMES}`);
      (perDay[day] ??= {})[field] = (perDay[day][field] ?? 0) + 1;
    }
    const mine = tags.filter((_, t) => (i + t) % (t + 2) === 0);
    for (const tag of mine) members.get(tag)!.push(identityKey);
    const rollup = { identityKey, days: perDay, sums: {}, cohorts: mine.map((t) => `t/${t}`), foldedInto: null, hw: 0 };
    found.push({ id: `${PROJECT}/${identityKey}`, rollup, hw: 0 });
  }
  return { days, tags, members, memory, found, today };
}

/** CPU milliseconds of each of RUNS calls of `read`: p50 and p99. */
async function cpu(read: () => Promise<unknown> | unknown) {
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const before = process.cpuUsage();
    await read();
    const used = process.cpuUsage(before);
    times.push((used.user + used.system) / 1000);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => Math.round(times[Math.min(times.length - 1, Math.floor(q * times.length))] * 10) / 10;
  return { p50_cpu_ms: at(0.5), p99_cpu_ms: at(0.99) };
}

export default async function kpisArithmeticBench() {
  const { days, tags, members, memory, found, today } = shape();
  await memory.fill(PROJECT, async () => found);
  const asOfNow = {
    read: async <Base>(
      _: string,
      filters: readonly CohortFilter[],
      read: (f: CohortFilter, e: Set<string>) => Promise<Base>,
    ) => ({ bases: await Promise.all(filters.map((filter) => read(filter, new Set()))), changed: [] }),
  } as unknown as AsOfNow;
  // Each member list the same array from read to read, as the membership buckets are while unchanged; or a copy, as
  // after a tag change (the read model made again).
  let copies = false;
  const directory = {
    members: async (_: string, filter: CohortFilter) => {
      const list = members.get(filter.tags[0])!;
      return [copies ? [...list] : list];
    },
  } as unknown as PlayerDirectory;
  const playerRollups = {
    slotted: async (projectId: string, keys: readonly (readonly string[])[] | null) => memory.slotted(projectId, keys)!,
  } as unknown as PlayerRollupStore;
  const activity = new PlayerActivity({ asOfNow, directory, playerRollups });
  const filters = tags.map((tag) => ({ tags: [tag], tagsMatch: "any" as const, traits: [], tagsNone: [] }));
  const read = () => activity.of(PROJECT, filters);
  const model = await read();
  const [from, to] = [dayNumber(days[0]), dayNumber(days.at(-1)!)];
  const firstDay = from - 60;
  const retention = { from, to, interval: "day" as const, periods: 30, mode: "n_day" as const, today, firstDay };
  return {
    players: PLAYERS,
    runs: RUNS,
    read_model_split_10_tags: await cpu(read),
    read_model_new_lists_split_10_tags: await cpu(() => {
      copies = true;
      return read().finally(() => (copies = false));
    }),
    retention_30x30_split_10_tags: await cpu(() => retentionTables(model, retention)),
    active_30_days_split_10_tags: await cpu(() => activePoints(model, { from, to, firstDay })),
    week_buckets_split_10_tags: await cpu(() => bucketCounts(model, days, "week", dayOfNumber(firstDay))),
    month_buckets_split_10_tags: await cpu(() => bucketCounts(model, days, "month", dayOfNumber(firstDay))),
  };
}
