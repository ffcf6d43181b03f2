import { idPart, projectScopedId } from "../../db/ids.js";
import { Bitmap } from "../../sets/bitmap.js";
import type { ChunkStore } from "../../sets/chunk-store.js";

/** Players a stored chunk of a trait's column covers: a value is at most 1,024 characters, so under 16 MiB a chunk. */
export const COLUMN_BITS = 11;
const COLUMN_SIZE = 1 << COLUMN_BITS;

/** A chunk of a trait key's column: each holder's value (as JSON), by its number within the chunk. */
export type TraitColumn = Map<number, string>;

/** A trait set or unset for a player: the value as JSON, or null. */
export interface TraitChange {
  number: number;
  key: string;
  value: string | null;
}

export const columnCodec = {
  decode: (doc: { values?: string } | null): TraitColumn =>
    new Map(Object.entries(JSON.parse(doc?.values ?? "{}") as Record<string, string>).map(([i, v]) => [Number(i), v])),
  encode: (column: TraitColumn) => ({ values: JSON.stringify(Object.fromEntries(column)) }),
  bytes: (column: TraitColumn) => 64 + [...column.values()].reduce((sum, value) => sum + 48 + 2 * value.length, 0),
  clone: (column: TraitColumn): TraitColumn => new Map(column),
};

/**
 * Every trait key's values, one column a key cut into chunks of players by number (`player_trait_columns`): a change
 * writes the chunks it touches, whatever the key's number of distinct values; a filter's set of holders of a value is
 * derived from the chunks and kept with each (a chunk is never changed in place, so what was derived from it holds).
 */
export class TraitColumns {
  private readonly derived = new WeakMap<TraitColumn, Map<string, Bitmap>>();

  constructor(private readonly store: ChunkStore<TraitColumn>) {}

  async write(projectId: string, changes: readonly TraitChange[]): Promise<void> {
    const byChunk = new Map<string, TraitChange[]>();
    for (const change of changes) {
      const id = this.chunkId(projectId, change.key, change.number >>> COLUMN_BITS);
      byChunk.set(id, [...(byChunk.get(id) ?? []), change]);
    }
    const writes = new Map(
      [...byChunk].map(([id, list]) => [
        id,
        (column: TraitColumn) => {
          let changed = false;
          for (const { number, value } of list) {
            const offset = number & (COLUMN_SIZE - 1);
            if ((column.get(offset) ?? null) === value) continue;
            if (value === null) column.delete(offset);
            else column.set(offset, value);
            changed = true;
          }
          return changed;
        },
      ]),
    );
    await this.store.update(projectId, writes);
  }

  /** The players (of numbers below `count`) whose trait `key` has the value `value` (as JSON). */
  async holders(projectId: string, key: string, value: string, count: number): Promise<Bitmap> {
    const chunks = Array.from({ length: Math.ceil(count / COLUMN_SIZE) }, (_, chunk) => chunk);
    const columns = await this.store.read(chunks.map((chunk) => this.chunkId(projectId, key, chunk)));
    const parts = columns.flatMap((column, i) => {
      const held = this.valuesOf(column, chunks[i]).get(value);
      return held ? [held] : [];
    });
    return parts.length === 0 ? new Bitmap() : Bitmap.orMany(parts);
  }

  /**
   * Whether `key` has proved low-cardinality: at least `holders` players hold it, with at most `values` distinct
   * values among them (read until it is clear either way).
   */
  async lowCardinality(
    projectId: string,
    key: string,
    count: number,
    { holders, values }: { holders: number; values: number },
  ) {
    const seen = new Set<string>();
    let held = 0;
    for (let chunk = 0; chunk < Math.ceil(count / COLUMN_SIZE); chunk++) {
      const [column] = await this.store.read([this.chunkId(projectId, key, chunk)]);
      for (const value of column.values()) seen.add(value);
      held += column.size;
      if (seen.size > values) return false;
    }
    return held >= holders;
  }

  /** Per value of the chunk, its holders (numbers of the project). */
  private valuesOf(column: TraitColumn, chunk: number): Map<string, Bitmap> {
    let values = this.derived.get(column);
    if (!values) {
      const lists = new Map<string, number[]>();
      for (const [offset, value] of column) {
        const list = lists.get(value);
        const number = (chunk << COLUMN_BITS) + offset;
        if (list) list.push(number);
        else lists.set(value, [number]);
      }
      values = new Map([...lists].map(([value, numbers]) => [value, new Bitmap(numbers)]));
      this.derived.set(column, values);
    }
    return values;
  }

  private chunkId(projectId: string, key: string, chunk: number): string {
    return projectScopedId(projectId, `${idPart(key)}/${chunk}`);
  }
}
