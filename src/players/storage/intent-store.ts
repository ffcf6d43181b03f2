import { randomUUID } from "node:crypto";
import type { Db, Filter } from "mongodb";
import { projectOfId, projectScopedId } from "../../db/ids.js";

/** The players a round writes and what of their cohorts it may move: a crash's repair re-derives those from them. */
export interface RoundIntent {
  projectId: string;
  /** Each player's identity key and its number in the sets (absent: none yet). */
  players: { key: string; number?: number }[];
  /** The sets' tags and the trait keys the round's players had or have. */
  tags: string[];
  traitKeys: string[];
}

interface IntentDoc {
  _id: string;
  players: { key: string; number?: number }[];
  tags: string[];
  trait_keys: string[];
  at: Date;
}

/**
 * The player_intents collection: a round records what it is about to write before its profiles, and forgets it once
 * the players' sets follow them; one left by a crash between the two is what the start's repair completes.
 */
export class IntentStore {
  private readonly docs;

  constructor(db: Db) {
    this.docs = db.collection<IntentDoc>("player_intents");
  }

  async createIndexes(queryIndexes: boolean): Promise<void> {
    if (queryIndexes) await this.docs.createIndex({ at: 1 });
  }

  /** Records `intent`; answers its id. */
  async record(intent: RoundIntent, now: Date): Promise<string> {
    const _id = projectScopedId(intent.projectId, randomUUID());
    const { players, tags, traitKeys } = intent;
    await this.docs.insertOne({ _id, players, tags, trait_keys: traitKeys, at: now });
    return _id;
  }

  async settle(id: string): Promise<void> {
    await this.docs.deleteOne({ _id: id });
  }

  /** The intents recorded before `before`: rounds that ended without forgetting theirs (a crash, most likely). */
  async stale(before: Date): Promise<(RoundIntent & { id: string })[]> {
    const docs = await this.docs.find({ at: { $lt: before } } as Filter<IntentDoc>).toArray();
    return docs.map((doc) => ({
      id: doc._id,
      projectId: projectOfId(doc._id),
      players: doc.players,
      tags: doc.tags,
      traitKeys: doc.trait_keys,
    }));
  }
}
