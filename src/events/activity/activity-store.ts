import { projectScopedId } from "../../db/ids.js";
import { chunkOf, CHUNK_BITS } from "../../sets/bitmap.js";
import type { ChunkStore } from "../../sets/chunk-store.js";
import type { PlayerNumbers } from "../../sets/player-numbers.js";
import { monthOf } from "../rollup-keys.js";
import { activityCodec, addActivity, takeActivity, type ActivityChunk, type PlayerActivity } from "./activity-chunk.js";

/** Per day of a month, the event names with activity that day: which chunks a read of a range reads. */
export type MonthNames = Map<string, Set<string>>;

/** A segment's activity: per day, per name, each player's. */
export interface SegmentActivity {
  seq: number;
  days: ReadonlyMap<string, ReadonlyMap<string, readonly PlayerActivity[]>>;
}

/** A day and a name with a player's activity. */
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
    await this.index(projectId, segments);
    const byChunk = new Map<string, { seq: number; players: PlayerActivity[] }[]>();
    for (const { seq, days } of segments) {
      for (const [day, names] of days) {
        for (const [name, players] of names) {
          for (const player of players) {
            const id = this.chunkId(projectId, day, name, chunkOf(player.number));
            const list = byChunk.get(id) ?? byChunk.set(id, []).get(id)!;
            if (list.at(-1)?.seq !== seq) list.push({ seq, players: [] });
            list.at(-1)!.players.push(player);
          }
        }
      }
    }
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

  /** The chunks of each of `names` (every name the day has, when absent) on each day, by day and name. */
  async read(projectId: string, days: readonly string[], names?: readonly string[]) {
    const namesByDay = await this.namesOn(projectId, days);
    const chunks = Math.ceil((await this.numbers.count(projectId)) / 2 ** CHUNK_BITS);
    const wanted: DayName[] = [];
    for (const [day, dayNames] of namesByDay) {
      for (const name of names ?? dayNames) if (dayNames.has(name)) wanted.push({ day, name });
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

  /** The days (of `days`) and names on which `number` has activity. */
  async pairsOf(projectId: string, number: number, days: readonly string[]): Promise<DayName[]> {
    const pairs = [...(await this.namesOn(projectId, days))].flatMap(([day, names]) =>
      [...names].map((name) => ({ day, name })),
    );
    const read = await this.chunks.read(
      pairs.map(({ day, name }) => this.chunkId(projectId, day, name, chunkOf(number))),
    );
    return pairs.filter((_, i) => read[i].players.has(number));
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
    const names = (await this.namesOn(projectId, [day])).get(day) ?? new Set<string>();
    const chunks = Math.ceil((await this.numbers.count(projectId)) / 2 ** CHUNK_BITS);
    await this.chunks.delete(
      [...names].flatMap((name) => Array.from({ length: chunks }, (_, c) => this.chunkId(projectId, day, name, c))),
    );
    await this.months.update(
      projectId,
      new Map([[projectScopedId(projectId, monthOf(day)), (month) => month.delete(day)]]),
    );
  }

  /** The names each of `days` (ascending) has, by day (days without any left out). */
  async namesOn(projectId: string, days: readonly string[]): Promise<Map<string, Set<string>>> {
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
  private async index(projectId: string, segments: readonly SegmentActivity[]): Promise<void> {
    const byMonth = new Map<string, [string, string][]>();
    for (const { days } of segments) {
      for (const [day, names] of days) {
        for (const name of names.keys()) {
          const id = projectScopedId(projectId, monthOf(day));
          byMonth.set(id, [...(byMonth.get(id) ?? []), [day, name]]);
        }
      }
    }
    const changes = new Map(
      [...byMonth].map(([id, pairs]) => [
        id,
        (month: MonthNames) => {
          let changed = false;
          for (const [day, name] of pairs) {
            const names = month.get(day) ?? month.set(day, new Set()).get(day)!;
            if (names.has(name)) continue;
            names.add(name);
            changed = true;
          }
          return changed;
        },
      ]),
    );
    await this.months.update(projectId, changes);
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
