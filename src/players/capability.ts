import type { Clock } from "../clock.js";
import type { Database } from "../db/database.js";
import { Players } from "./players.js";
import { PlayerStore } from "./store.js";

/** Players ready to serve, their indexes made. */
export async function createPlayers({ database, clock }: { database: Database; clock: Clock }): Promise<Players> {
  const store = new PlayerStore(database.db, database.isFerretDb);
  await store.createIndexes();
  return new Players(store, clock);
}
