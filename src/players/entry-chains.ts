/**
 * Splits the entries of one update call into chains: entries that share any
 * identity key are in one chain, in request order, so that they apply in that
 * order; different chains touch different players and may run side by side.
 */
export function entryChains(keysPerEntry: readonly (readonly string[])[]): number[][] {
  const chainOfKey = new Map<string, number[]>();
  const chains: number[][] = [];
  keysPerEntry.forEach((keys, index) => {
    const touched = [...new Set(keys.map((key) => chainOfKey.get(key)).filter((chain) => chain !== undefined))];
    const chain = touched.flat().sort((a, b) => a - b);
    chain.push(index);
    for (const old of touched) chains.splice(chains.indexOf(old), 1);
    chains.push(chain);
    for (const i of chain) for (const key of keysPerEntry[i]) chainOfKey.set(key, chain);
  });
  return chains.sort((a, b) => a[0] - b[0]);
}

/** Runs `work` on every item with at most `limit` in flight. */
export async function runLimited<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
