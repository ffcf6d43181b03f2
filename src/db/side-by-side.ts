import { Gate } from "./gate.js";

/**
 * Point reads of one request in flight at once. Side by side is how to read
 * many documents fast on FerretDB (`$in` scans); a window keeps most of the
 * speed without one request taking every connection.
 */
export const READS_IN_FLIGHT = 16;

/**
 * Point reads of the whole process in flight at once. Per request alone, 8
 * update calls of 100 entries sent 128 reads at once: they queued in the
 * driver's pool and inside FerretDB past the database deadline (503s in the
 * players bench at 100,000 profiles); queued here, they wait without one.
 */
const reads = new Gate(32);

/** `read(item)` for every item, at most READS_IN_FLIGHT at once (and the process's limit); answers in the order of `items`. */
export async function sideBySide<T, R>(items: readonly T[], read: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await reads.run(() => read(items[i]));
    }
  };
  await Promise.all(Array.from({ length: Math.min(READS_IN_FLIGHT, items.length) }, worker));
  return results;
}
