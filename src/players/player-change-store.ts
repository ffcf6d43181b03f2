import type { Engine } from "../db/engine.js";
import { randomUUID } from "node:crypto";
import type { Db } from "mongodb";
import { unavailableOf } from "../db/errors.js";
import { KeyedLock } from "../db/keyed-lock.js";

/**
 * What a players round changes, recorded before it writes: the players whose
 * cohorts (tags or traits) move, the folds it makes, and the tags whose
 * membership it moves (their players are `identityKeys` and the folds' sources).
 */
export interface PlayerChange {
  identityKeys: string[];
  folds: { from: string; into: string }[];
  tags: string[];
}

/** A change recorded before its round's profile writes, until the resync queued after them is applied. */
export interface PendingChange extends PlayerChange {
  id: string;
  at: Date;
}

interface StoredChange {
  k: string[];
  /** Objects, not pairs: FerretDB stores no nested arrays. */
  f: { from: string; into: string }[];
  /** Absent on changes recorded before membership followed them (no tag to repair). */
  t?: string[];
  at: Date;
}

interface ChangesDoc {
  _id: string;
  /** By change id: one field each, so adding one and settling another never touch the same field. */
  changes: Record<string, StoredChange>;
}

/**
 * The event_player_changes collection: one document per project (`_id` the
 * project) listing the player changes whose rounds may not be complete yet.
 * A round records its change before it writes a profile, writes its tag
 * membership, then queues the resync that moves the players' event
 * histories; the apply worker settles the change once that resync is applied.
 * So a change still listed is what a crash can have left half done: the
 * membership repair re-derives its tags from the profiles, the events side's
 * change repair queues its resync again, and every chart meanwhile counts its
 * players as of now (src/events/as-of-now.ts).
 */
export class PlayerChangeStore {
  private readonly docs;
  /**
   * An engine that does not isolate updates (FerretDB 1.24, one process its owner) loses concurrent updates of
   * one document, so there its writes run one at a time; elsewhere each update is isolated, and the fields written
   * differ. A write that finds the database unavailable fails those queued behind it at once.
   */
  private readonly locks: KeyedLock | null;

  constructor(db: Db, engine: Engine) {
    this.docs = db.collection<ChangesDoc>("event_player_changes");
    this.locks = engine.isolatesUpdates ? null : new KeyedLock(unavailableOf);
  }

  private serialised<T>(projectId: string, write: () => Promise<T>): Promise<T> {
    return this.locks ? this.locks.run([projectId], write) : write();
  }

  /** Records a change before it is made; answers its id. */
  async record(projectId: string, change: PlayerChange, at: Date): Promise<string> {
    const id = randomUUID().replaceAll("-", "");
    const stored: StoredChange = {
      k: change.identityKeys,
      f: change.folds.map(({ from, into }) => ({ from, into })),
      t: change.tags,
      at,
    };
    await this.serialised(projectId, () =>
      this.docs.updateOne({ _id: projectId }, { $set: { [`changes.${id}`]: stored } }, { upsert: true }),
    );
    return id;
  }

  /** The project's changes not yet settled. */
  async pending(projectId: string): Promise<PendingChange[]> {
    const doc = await this.docs.findOne({ _id: projectId });
    return doc ? changesOf(doc) : [];
  }

  /** The change's history move is applied (and its membership written before it was queued): nothing is left of it. */
  async settle(projectId: string, id: string): Promise<void> {
    await this.serialised(projectId, () =>
      this.docs.updateOne({ _id: projectId }, { $unset: { [`changes.${id}`]: "" } }),
    );
  }

  /** The change was queued again at `at`: the next check leaves it alone until it is as old again. */
  async requeued(projectId: string, id: string, at: Date): Promise<void> {
    const field = `changes.${id}`;
    await this.serialised(projectId, () =>
      // Guarded, so a change settled meanwhile is not brought back as a bare time. A rare write: FerretDB scans for it.
      this.docs.updateOne({ _id: projectId, [field]: { $exists: true } }, { $set: { [`${field}.at`]: at } }),
    );
  }

  /** Every project's changes recorded before `before` and still not settled. A periodic check: it scans. */
  async olderThan(before: Date): Promise<{ projectId: string; change: PendingChange }[]> {
    const docs = await this.docs.find({}).toArray();
    return docs.flatMap((doc) =>
      changesOf(doc)
        .filter((change) => change.at < before)
        .map((change) => ({ projectId: doc._id, change })),
    );
  }
}

function changesOf(doc: ChangesDoc): PendingChange[] {
  return Object.entries(doc.changes ?? {}).map(([id, { k, f, t, at }]) => ({
    id,
    identityKeys: k,
    folds: f.map(({ from, into }) => ({ from, into })),
    tags: t ?? [],
    at,
  }));
}
