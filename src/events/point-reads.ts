/**
 * Reads at most this many documents at once: point reads side by side are the
 * fast way to read many documents (an `$in` over `_id` scans on FerretDB), but
 * hundreds at once only queue for the connection pool and starve other work.
 */
export const POINT_READ_CONCURRENCY = 16;

/** `read` of every key, POINT_READ_CONCURRENCY at a time, answers in key order. */
export async function pointReads<K, T>(keys: readonly K[], read: (key: K) => Promise<T>): Promise<T[]> {
  const answers: T[] = new Array(keys.length);
  let next = 0;
  const reader = async () => {
    while (next < keys.length) {
      const i = next++;
      answers[i] = await read(keys[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(POINT_READ_CONCURRENCY, keys.length) }, reader));
  return answers;
}
