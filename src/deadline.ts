import { setTimeout as delay } from "node:timers/promises";

/**
 * Waits for `work` until `deadline` (ms since the epoch): true when it settled by then (a failure counts: the caller
 * handles it on `work` itself), false when the deadline came first and it goes on unwaited for (a stop's bounded steps).
 */
export async function settledBy(work: Promise<unknown>, deadline: number): Promise<boolean> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      delay(Math.max(0, deadline - Date.now()), false, { ref: false, signal: timer.signal }),
    ]);
  } finally {
    timer.abort();
  }
}
