import type { Clock } from "../clock.js";
import type { Database } from "../db/database.js";
import { Players } from "./players.js";
import { createPlayerIndexes, createPlayerStores } from "./stores.js";

/** Players ready to serve, their indexes made. */
export async function createPlayers({ database, clock }: { database: Database; clock: Clock }): Promise<Players> {
  const stores = createPlayerStores(database.db, database.isFerretDb);
  await createPlayerIndexes(stores);
  return new Players(stores, clock);
}
