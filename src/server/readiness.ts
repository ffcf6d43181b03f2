import type { Database } from "../db/database.js";

export type Readiness = { ready: true } | { ready: false; reason: string };

export interface ReadinessOptions {
  database: Database;
  /** The answer's deadline: a database that has not answered a ping by then is not ready. */
  timeoutMs: number;
}

/**
 * A readiness check for /readyz and the gRPC health service: the database answers a ping within `timeoutMs`. Checks that overlap share one ping, so probes
 * during a stall never pile up connections.
 */
export function createReadinessCheck({ database, timeoutMs }: ReadinessOptions): () => Promise<Readiness> {
  let inFlight: Promise<Readiness> | undefined;
  const ping = (): Promise<Readiness> => {
    inFlight ??= database.db
      .command({ ping: 1 })
      .then((): Readiness => ({ ready: true }))
      .catch((): Readiness => ({ ready: false, reason: "database unreachable" }))
      .finally(() => (inFlight = undefined));
    return inFlight;
  };
  return async () => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<Readiness>((resolve) => {
      timer = setTimeout(() => resolve({ ready: false, reason: "database did not answer in time" }), timeoutMs);
    });
    try {
      return await Promise.race([ping(), late]);
    } finally {
      clearTimeout(timer);
    }
  };
}
