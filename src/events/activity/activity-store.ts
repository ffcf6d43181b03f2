import { projectScopedId } from "../../db/ids.js";
import { chunkOf, CHUNK_BITS } from "../../sets/bitmap.js";
import type { ChunkStore } from "../../sets/chunk-store.js";
import type { PlayerNumbers } from "../../sets/player-numbers.js";
import { monthOf } from "../rollup-keys.js";
import { activityCodec, addActivity, takeActivity, type ActivityChunk, type PlayerActivity } from "./activity-chunk.js";

/**
 * Per day of a month, the series with activity that day (which chunks a read of a range reads): an event name's
 * (its players and events), and each of its summed properties' (`<name>/<sum id>`), kept apart so that no chunk nears
 * 16 MiB whatever a project sums.
 */
export type MonthNames = Map<string, Set<string>>;

/** The series of a summed property of an event name (a name never holds "/"). */
const sumSeries = (name: string, id: string) => `${name}/${id}`;
/** The event name of a series. */
export const nameOfSeries = (series: string) => series.split("/")[0];
/** The summed property of a series (undefined: the name's own). */
export const sumOfSeries = (series: string): string | undefined => series.split("/")[1];

/** A segment's activity: per day, per name, each player's. */
export interface SegmentActivity {
  seq: number;
  days: ReadonlyMap<string, ReadonlyMap<string, readonly PlayerActivity[]>>;
}

/** A day and a series (a name's, or a sum's) with a player's activity. */
export interface DayName {
  day: string;
  name: string;
}

/**
 * The players' activity as sets (`event_activity`: a chunk per project, day, name and chunk of numbers), and per
 * month the names each day has (`event_activity_days`). Written by the apply worker alone (the queue's lease on the
 * project), a segment at most once per chunk (`hw`), a fold or erasure at most once (`moved`).
 */
export class ActivityStore {
  constructor(
    private readonly chunks: ChunkStore<ActivityChunk>,
    private readonly months: ChunkStore<MonthNames>,
    private readonly numbers: PlayerNumbers,
  ) {}

  /** Counts the activity of segments (ascending), each in each chunk it touches unless that chunk counts it already. */
  async count(projectId: string, segments: readonly SegmentActivity[]): Promise<void> {
    const added = await this.index(projectId, segments);
    const byChunk = new Map<string, { seq: number; players: PlayerActivity[] }[]>();
    for (const { seq, days } of segments) {
      for (const [day, names] of days) {
        for (const [name, players] of names) {
          for (const player of players) {
            const add = (series: string, part: PlayerActivity) => {
              const id = this.chunkId(projectId, day, series, chunkOf(player.number));
              const list = byChunk.get(id) ?? byChunk.set(id, []).get(id)!;
              if (list.at(-1)?.seq !== seq) list.push({ seq, players: [] });
              list.at(-1)!.players.push(part);
            };
            if (player.events > 0) add(name, { ...player, sums: new Map() });
            for (const [sum, millionths] of player.sums) {
              add(sumSeries(name, sum), { number: player.number, events: 0, sums: new Map([[sum, millionths]]) });
            }
          }
        }
      }
    }
    // A series new to a day has no chunk yet: the index is written before its chunks, and a sweep deletes it after.
    this.chunks.assumeAbsent(
      [...byChunk.keys()].filter((id) => added.has(id.slice(projectId.length + 1, id.lastIndexOf("/")))),
    );
    const changes = new Map(
      [...byChunk].map(([id, bySegment]) => [
        id,
        (chunk: ActivityChunk) => {
          const fresh = bySegment.filter(({ seq }) => seq > chunk.hw);
          for (const { players } of fresh) for (const player of players) addActivity(chunk, player);
          if (fresh.length > 0) chunk.hw = fresh.at(-1)!.seq;
          return fresh.length > 0;
        },
      ]),
    );
    await this.chunks.update(projectId, changes);
  }

  /** The chunks of each series of `names` (every name, when absent) on each day, by day and series. */
  async read(projectId: string, days: readonly string[], names?: readonly string[]) {
    const seriesByDay = await this.seriesOn(projectId, days);
    const chunks = Math.ceil((await this.numbers.count(projectId)) / 2 ** CHUNK_BITS);
    const wanted: DayName[] = [];
    for (const [day, series] of seriesByDay) {
      for (const name of series) if (!names || names.includes(nameOfSeries(name))) wanted.push({ day, name });
    }
    const ids = wanted.flatMap(({ day, name }) =>
      Array.from({ length: chunks }, (_, c) => this.chunkId(projectId, day, name, c)),
    );
    const read = wanted.length === 0 ? [] : await this.chunks.readRange(ids, this.daysRange(projectId, wanted));
    const found = new Map<string, Map<string, ActivityChunk[]>>();
    wanted.forEach(({ day, name }, i) => {
      const byName = found.get(day) ?? found.set(day, new Map()).get(day)!;
      byName.set(name, read.slice(i * chunks, (i + 1) * chunks));
    });
    return found;
  }

  /** The days (of `days`) and series on which `number` has activity: its names', and their sums'. */
  async pairsOf(projectId: string, number: number, days: readonly string[]): Promise<DayName[]> {
    const pairs = [...(await this.seriesOn(projectId, days))].flatMap(([day, series]) =>
      [...series].map((name) => ({ day, name })),
    );
    const read = await this.chunks.read(
      pairs.map(({ day, name }) => this.chunkId(projectId, day, name, chunkOf(number))),
    );
    const held = (chunk: ActivityChunk) =>
      chunk.players.has(number) ||
      [...chunk.sums.values()].some(({ pos, neg }) => [...pos, ...neg].some((s) => s.has(number)));
    return pairs.filter((_, i) => held(read[i]));
  }

  /**
   * Moves `from`'s activity into `into`'s on each pair, once: `mark` (markOf: the fold's queue segment and its place
   * in it) is recorded on each chunk it changes, and a chunk whose mark is as high already is left alone.
   */
  async move(projectId: string, mark: number, from: number, into: number, pairs: readonly DayName[]): Promise<void> {
    for (const { day, name } of pairs) {
      const source = this.chunkId(projectId, day, name, chunkOf(from));
      const target = this.chunkId(projectId, day, name, chunkOf(into));
      const moveIn = (chunk: ActivityChunk, activity: PlayerActivity | null) => {
        if (chunk.moved >= mark || !activity) return false;
        addActivity(chunk, { ...activity, number: into });
        chunk.moved = mark;
        return true;
      };
      if (source === target) {
        await this.chunks.update(projectId, new Map([[source, (chunk) => moveIn(chunk, takeActivity(chunk, from))]]));
        continue;
      }
      // The target first, marked: a crash before the source is taken finds the target done, and takes the source.
      const [held] = await this.chunks.read([source]);
      const activity = held.moved >= mark ? null : takeActivity(activityCodec.clone(held), from);
      await this.chunks.update(projectId, new Map([[target, (chunk) => moveIn(chunk, activity)]]));
      await this.chunks.update(projectId, new Map([[source, (chunk) => this.taken(chunk, mark, [from])]]));
    }
  }

  /** Takes the activity of each of `numbers` out of its pairs (an erasure; `mark` as for move). */
  async erase(projectId: string, mark: number, pairs: ReadonlyMap<number, readonly DayName[]>): Promise<void> {
    const byChunk = new Map<string, number[]>();
    for (const [number, ofNumber] of pairs) {
      for (const { day, name } of ofNumber) {
        const id = this.chunkId(projectId, day, name, chunkOf(number));
        byChunk.set(id, [...(byChunk.get(id) ?? []), number]);
      }
    }
    const changes = new Map(
      [...byChunk].map(([id, numbers]) => [id, (chunk: ActivityChunk) => this.taken(chunk, mark, numbers)]),
    );
    await this.chunks.update(projectId, changes);
  }

  /**
   * Takes `day`'s activity out (the retention sweep): its chunks, then its place in the month's names.
   */
  async dropDay(projectId: string, day: string): Promise<void> {
    const names = (await this.seriesOn(projectId, [day])).get(day) ?? new Set<string>();
    const chunks = Math.ceil((await this.numbers.count(projectId)) / 2 ** CHUNK_BITS);
    await this.chunks.delete(
      [...names].flatMap((name) => Array.from({ length: chunks }, (_, c) => this.chunkId(projectId, day, name, c))),
    );
    await this.months.update(
      projectId,
      new Map([[projectScopedId(projectId, monthOf(day)), (month) => month.delete(day)]]),
    );
  }

  /** The event names each of `days` (ascending) has, by day (days without any left out). */
  async namesOn(projectId: string, days: readonly string[]): Promise<Map<string, Set<string>>> {
    const series = await this.seriesOn(projectId, days);
    return new Map([...series].map(([day, keys]) => [day, new Set([...keys].filter((key) => !sumOfSeries(key)))]));
  }

  /** The series each of `days` (ascending) has, by day (days without any left out). */
  private async seriesOn(projectId: string, days: readonly string[]): Promise<Map<string, Set<string>>> {
    const months = [...new Set(days.map(monthOf))];
    if (months.length === 0) return new Map();
    const ids = months.map((month) => projectScopedId(projectId, month));
    const range = { $gte: ids[0], $lt: `${ids.at(-1)}/` };
    const read = await this.months.readRange(ids, range);
    const byMonth = new Map(months.map((month, i) => [month, read[i]]));
    const found = new Map<string, Set<string>>();
    for (const day of days) {
      const names = byMonth.get(monthOf(day))!.get(day);
      if (names) found.set(day, names);
    }
    return found;
  }

  private taken(chunk: ActivityChunk, mark: number, numbers: readonly number[]): boolean {
    if (chunk.moved >= mark) return false;
    for (const number of numbers) takeActivity(chunk, number);
    chunk.moved = mark;
    return true;
  }

  /** Records the names new to a day of the segments' months. */
  private async index(projectId: string, segments: readonly SegmentActivity[]): Promise<Set<string>> {
    const byMonth = new Map<string, [string, string][]>();
    for (const { days } of segments) {
      for (const [day, names] of days) {
        for (const [name, players] of names) {
          const id = projectScopedId(projectId, monthOf(day));
          const sums = new Set(players.flatMap((player) => [...player.sums.keys()]));
          const series = [
            ...(players.some((p) => p.events > 0) ? [name] : []),
            ...[...sums].map((sum) => sumSeries(name, sum)),
          ];
          byMonth.set(id, [...(byMonth.get(id) ?? []), ...series.map((one): [string, string] => [day, one])]);
        }
      }
    }
    // The day and series new to the index (a change may run again: each run starts afresh).
    const added = new Map<string, string[]>();
    const changes = new Map(
      [...byMonth].map(([id, pairs]) => [
        id,
        (month: MonthNames) => {
          added.set(id, []);
          for (const [day, name] of pairs) {
            const names = month.get(day) ?? month.set(day, new Set()).get(day)!;
            if (names.has(name)) continue;
            names.add(name);
            added.get(id)!.push(`${day}/${name}`);
          }
          return added.get(id)!.length > 0;
        },
      ]),
    );
    await this.months.update(projectId, changes);
    return new Set([...added.values()].flat());
  }

  /** The `_id` range of every chunk of the days of `pairs` (ascending by day). */
  private daysRange(projectId: string, pairs: readonly DayName[]) {
    return {
      $gte: projectScopedId(projectId, `${pairs[0].day}/`),
      $lt: projectScopedId(projectId, `${pairs.at(-1)!.day}0`),
    };
  }

  private chunkId(projectId: string, day: string, name: string, chunk: number): string {
    return projectScopedId(projectId, `${day}/${name}/${chunk}`);
  }
}

/** The mark of the `index`th fold or erasure of queue segment `seq`: ascending in queue order. */
export const markOf = (seq: number, index: number): number => seq * 1024 + index;

/** A month's days and their series, stored as one JSON string (FerretDB decodes a document field by field). */
export const monthsCodec = {
  decode: (doc: { days?: string } | null): MonthNames =>
    new Map(Object.entries(JSON.parse(doc?.days ?? "{}") as Record<string, string[]>).map(([d, n]) => [d, new Set(n)])),
  encode: (month: MonthNames) => ({
    days: JSON.stringify(Object.fromEntries([...month].map(([d, n]) => [d, [...n]]))),
  }),
  bytes: (month: MonthNames) => 64 + [...month.values()].reduce((sum, names) => sum + 32 + 40 * names.size, 0),
  clone: (month: MonthNames): MonthNames => new Map([...month].map(([day, names]) => [day, new Set(names)])),
};
