import type { Bitmap } from "../../sets/bitmap.js";
import type { PlayerNumbers } from "../../sets/player-numbers.js";
import { compareKeys, sortKeys } from "../rules/identity-key.js";

/** Keys numbered since the order was sorted, held apart until there are this many (then merged in). */
const MERGE_AFTER = 4_096;

/** A project's numbered players in identity key order: a sorted run, and the few numbered since, sorted apart. */
interface Order {
  count: number;
  sorted: [string, number][];
  recent: [string, number][];
}

const byKey = (a: [string, number], b: [string, number]) => compareKeys(a[0], b[0]);

/**
 * Every numbered player of a project in identity key order (search and export page through a cohort's set in this
 * order): read once from the numbers' keys, then brought up to date with the numbers handed out since.
 */
export class IdentityOrder {
  private readonly projects = new Map<string, Order>();

  constructor(private readonly numbers: PlayerNumbers) {}

  /** The members of `set` in identity key order, from the `skip`th, at most `limit`. */
  async page(projectId: string, set: Bitmap, skip: number, limit: number): Promise<[string, number][]> {
    const found: [string, number][] = [];
    if (limit <= 0 || set.isEmpty) return found;
    let skipped = 0;
    for (const entry of this.inOrder(await this.current(projectId))) {
      if (!set.has(entry[1])) continue;
      if (skipped++ < skip) continue;
      found.push(entry);
      if (found.length === limit) break;
    }
    return found;
  }

  /** Every member of `set` in identity key order, a batch at a time (an export). */
  async *all(projectId: string, set: Bitmap, batch: number): AsyncGenerator<[string, number][]> {
    let found: [string, number][] = [];
    for (const entry of this.inOrder(await this.current(projectId))) {
      if (!set.has(entry[1])) continue;
      found.push(entry);
      if (found.length === batch) {
        yield found;
        found = [];
      }
    }
    if (found.length > 0) yield found;
  }

  private async current(projectId: string): Promise<Order> {
    const count = await this.numbers.count(projectId);
    let order = this.projects.get(projectId);
    if (!order) this.projects.set(projectId, (order = { count: 0, sorted: [], recent: [] }));
    if (order.count < count) {
      const from = order.count;
      const added: [string, number][] = [];
      for await (const [number, key] of this.numbers.keysBetween(projectId, from, count)) added.push([key, number]);
      if (from === 0) order.sorted = sortEntries(added);
      else order.recent = [...order.recent, ...added].sort(byKey);
      order.count = count;
      if (order.recent.length > MERGE_AFTER) {
        order.sorted = merged(order.sorted, order.recent);
        order.recent = [];
      }
    }
    return order;
  }

  /** The two sorted runs of an order, merged as they are read. */
  private *inOrder({ sorted, recent }: Order): Generator<[string, number]> {
    let i = 0;
    let j = 0;
    while (i < sorted.length || j < recent.length) {
      if (j === recent.length || (i < sorted.length && compareKeys(sorted[i][0], recent[j][0]) <= 0)) yield sorted[i++];
      else yield recent[j++];
    }
  }
}

/** Sorted by key: the engine's own sort of the keys (sortKeys), then each key's numbers (a lost number shares one). */
function sortEntries(entries: [string, number][]): [string, number][] {
  const numbersOf = new Map<string, number[]>();
  for (const [key, number] of entries) numbersOf.set(key, [...(numbersOf.get(key) ?? []), number]);
  return sortKeys([...numbersOf.keys()]).flatMap((key) => numbersOf.get(key)!.map((n): [string, number] => [key, n]));
}

function merged(a: readonly [string, number][], b: readonly [string, number][]): [string, number][] {
  const out: [string, number][] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j === b.length || (i < a.length && compareKeys(a[i][0], b[j][0]) <= 0)) out.push(a[i++]);
    else out.push(b[j++]);
  }
  return out;
}
