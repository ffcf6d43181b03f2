import { Bitmap, bytesOf, joined } from "../../sets/bitmap.js";
import type { Slices } from "../../sets/bsi.js";
import type { ChunkCache } from "../../sets/chunk-cache.js";
import type { ActivityChunk, SumSlices } from "../activity/activity-chunk.js";
import { nameOfSeries, type ActivityStore } from "../activity/activity-store.js";

/** One name's activity on one day, every chunk of numbers joined: the sets a read's arithmetic runs on. */
export interface DayActivity {
  players: Bitmap;
  counts: Slices;
  sums: Map<string, SumSlices>;
}

/** Per day, per name: its activity (days and names without any left out). */
export type DaySets = Map<string, Map<string, DayActivity>>;

const EMPTY = new Bitmap();

/** Assembled sets kept from read to read, each with the stored chunks it was made of. */
interface Kept<T> {
  parts: readonly object[];
  value: T;
}

/**
 * The sets of a range of days, joined from their stored chunks, and what reads derive from them (a day's players of
 * any of some names), each kept in the instance's cache (within CACHE_MB, beside the chunks) while the chunks it was
 * made of are the ones the store holds: a chunk written is a new object, so what was made of the old one is made again.
 */
export class DaySetReader {
  constructor(
    private readonly activity: ActivityStore,
    private readonly cache: ChunkCache,
  ) {}

  /** The activity of `days` (of `names`, every name when absent). */
  async read(projectId: string, days: readonly string[], names?: readonly string[]): Promise<DaySets> {
    const read = await this.activity.read(projectId, days, names);
    const sets: DaySets = new Map();
    for (const [day, bySeries] of read) {
      // Per name: the chunks of its own series and of each of its sums' (activity-store.ts), joined into one.
      const byName = new Map<string, ActivityChunk[]>();
      for (const [series, chunks] of bySeries) {
        const name = nameOfSeries(series);
        byName.set(name, [...(byName.get(name) ?? []), ...chunks]);
      }
      const assembled = new Map<string, DayActivity>();
      for (const [name, chunks] of byName) {
        assembled.set(
          name,
          this.keep(`${projectId}/${day}/${name}`, chunks, () => join(chunks), activityBytes),
        );
      }
      sets.set(day, assembled);
    }
    return sets;
  }

  /** A day's players with an event of any of `names` (every name when absent). */
  playersOf(projectId: string, day: string, sets: DaySets, names?: readonly string[]): Bitmap {
    const byName = sets.get(day);
    if (!byName) return EMPTY;
    const parts = [...byName].filter(([name]) => !names || names.includes(name)).map(([, day]) => day.players);
    const key = `${projectId}/${day}/any/${names?.join(",") ?? ""}`;
    return this.keep(key, parts, () => joined(parts), bytesOf);
  }

  /**
   * Per day of `days` (ascending, from the retention window's first day), the players whose first day of activity
   * (of `names`: a start name, or the active players' names) it is: each day's players less every earlier day's.
   */
  firstDays(projectId: string, days: readonly string[], sets: DaySets, names?: readonly string[]): Map<string, Bitmap> {
    const parts = days.map((day) => this.playersOf(projectId, day, sets, names));
    return this.keep(
      `${projectId}/first/${names?.join(",") ?? ""}/${days[0]}`,
      parts,
      () => {
        const seen = new Bitmap();
        return new Map(
          days.map((day, i) => {
            const first = Bitmap.andNot(parts[i], seen);
            seen.orInPlace(parts[i]);
            return [day, first];
          }),
        );
      },
      (firsts) => [...firsts.values()].reduce((sum, bitmap) => sum + bytesOf(bitmap), 0),
    );
  }

  private keep<T>(key: string, parts: readonly object[], make: () => T, bytes: (value: T) => number): T {
    const held = this.cache.get<Kept<T>>(`day-sets/${key}`)?.value;
    if (held && held.parts.length === parts.length && held.parts.every((part, i) => part === parts[i]))
      return held.value;
    const value = make();
    this.cache.set(`day-sets/${key}`, { value: { parts, value }, v: 0, bytes: bytes(value) });
    return value;
  }
}

/** Bytes a day's activity holds (its slices' too), for the cache's budget. */
function activityBytes({ players, counts, sums }: DayActivity): number {
  const slices = [...counts, ...[...sums.values()].flatMap(({ pos, neg }) => [...pos, ...neg])];
  return slices.reduce((sum, slice) => sum + bytesOf(slice), bytesOf(players));
}

function join(chunks: readonly ActivityChunk[]): DayActivity {
  const depth = Math.max(0, ...chunks.map((chunk) => chunk.counts.length));
  const ids = new Set(chunks.flatMap((chunk) => [...chunk.sums.keys()]));
  const slices = (pick: (chunk: ActivityChunk) => Slices | undefined, length: number) =>
    Array.from({ length }, (_, k) => joined(chunks.flatMap((chunk) => pick(chunk)?.[k] ?? [])));
  return {
    players: joined(chunks.map((chunk) => chunk.players)),
    counts: slices((chunk) => chunk.counts, depth),
    sums: new Map(
      [...ids].map((id) => {
        const of = (side: "pos" | "neg") => (chunk: ActivityChunk) => chunk.sums.get(id)?.[side];
        const length = (side: "pos" | "neg") => Math.max(0, ...chunks.map((chunk) => of(side)(chunk)?.length ?? 0));
        return [id, { pos: slices(of("pos"), length("pos")), neg: slices(of("neg"), length("neg")) }];
      }),
    ),
  };
}
