import { BSON, type Document } from "mongodb";
import type { TestService } from "../service/service.js";

/** A project's record of changed players as stored (src/players/changed-players.ts): its documents, entries and tags. */
export interface StoredChangedPlayers {
  /** Each shard document's size in bytes (BSON). */
  sizes: number[];
  /** The identity keys with an entry, sorted. */
  keys: string[];
  /** The tags the project's shards list as moved, sorted and distinct. */
  tags: string[];
}

export async function storedChangedPlayers(svc: TestService, projectId: string): Promise<StoredChangedPlayers> {
  const docs = await svc.database.db
    .collection<Document & { _id: string }>("player_changes")
    .find({ _id: { $gte: `${projectId}/`, $lt: `${projectId}0` } })
    .toArray();
  const entries = docs.flatMap((doc) => Object.values((doc.p ?? {}) as Record<string, { k: string }>));
  const tags = docs.flatMap((doc) => Object.values((doc.t ?? {}) as Record<string, string>));
  return {
    sizes: docs.map((doc) => BSON.calculateObjectSize(doc)),
    keys: entries.map((entry) => entry.k).sort(),
    tags: [...new Set(tags)].sort(),
  };
}
