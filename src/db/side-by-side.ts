/**
 * Point reads of one request in flight at once. Side by side is how to read
 * many documents fast on FerretDB (`$in` scans), but hundreds at once from
 * several requests queue in the driver's pool and the engine past the
 * database deadline; a window keeps most of the speed without the queue.
 */
export const READS_IN_FLIGHT = 16;

/** `read(item)` for every item, at most READS_IN_FLIGHT at once; answers in the order of `items`. */
export async function sideBySide<T, R>(items: readonly T[], read: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await read(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(READS_IN_FLIGHT, items.length) }, worker));
  return results;
}
