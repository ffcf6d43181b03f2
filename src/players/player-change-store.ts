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

/** The owner's copy of a project's document: its pending changes, and those settled but still in the database. */
interface RememberedChanges {
  pending: Map<string, PendingChange>;
  settled: Set<string>;
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
 *
 * The owner of an embedded database keeps each project's document in memory
 * once read: charts read it there, and a settled change leaves the database
 * with the project's next recorded change (one statement), or at a clean
 * stop. After a crash such a change is repaired again: idempotent, and no
 * more than one project's changes settled since its last round.
 */
export class PlayerChangeStore {
  private readonly docs;
  /**
   * An engine that does not isolate updates (FerretDB 1.24, one process its owner) loses concurrent updates of
   * one document, so there its writes run one at a time; elsewhere each update is isolated, and the fields written
   * differ. A write that finds the database unavailable fails those queued behind it at once.
   */
  private readonly locks: KeyedLock | null;
  private readonly memory: Map<string, RememberedChanges> | null;

  constructor(db: Db, engine: Engine) {
    this.docs = db.collection<ChangesDoc>("event_player_changes");
    this.locks = engine.isolatesUpdates ? null : new KeyedLock(unavailableOf);
    this.memory = engine.ownerMemory ? new Map() : null;
  }

  private serialised<T>(projectId: string, write: () => Promise<T>): Promise<T> {
    return this.locks ? this.locks.run([projectId], write) : write();
  }

  /** Records a change before it is made (with the owner's settled ones removed in the same statement); answers its id. */
  async record(projectId: string, change: PlayerChange, at: Date): Promise<string> {
    const id = randomUUID().replaceAll("-", "");
    const stored: StoredChange = {
      k: change.identityKeys,
      f: change.folds.map(({ from, into }) => ({ from, into })),
      t: change.tags,
      at,
    };
    await this.serialised(projectId, async () => {
      const remembered = this.memory && (await this.remembered(projectId));
      const settled = [...(remembered?.settled ?? [])];
      const unset = unsetOf(settled);
      const update =
        settled.length > 0
          ? { $set: { [`changes.${id}`]: stored }, $unset: unset }
          : { $set: { [`changes.${id}`]: stored } };
      await this.docs.updateOne({ _id: projectId }, update, { upsert: true });
      for (const gone of settled) remembered!.settled.delete(gone);
      remembered?.pending.set(id, pendingOf(id, stored));
    });
    return id;
  }

  /** The project's changes not yet settled. */
  async pending(projectId: string): Promise<PendingChange[]> {
    if (this.memory) return [...(await this.remembered(projectId)).pending.values()];
    const doc = await this.docs.findOne({ _id: projectId });
    return doc ? changesOf(doc) : [];
  }

  /** The change's history move is applied (and its membership written before it was queued): nothing is left of it. */
  async settle(projectId: string, id: string): Promise<void> {
    await this.serialised(projectId, async () => {
      if (!this.memory) {
        await this.docs.updateOne({ _id: projectId }, { $unset: { [`changes.${id}`]: "" } });
        return;
      }
      const remembered = await this.remembered(projectId);
      remembered.pending.delete(id);
      remembered.settled.add(id);
    });
  }

  /** The change was queued again at `at`: the next check leaves it alone until it is as old again. */
  async requeued(projectId: string, id: string, at: Date): Promise<void> {
    const field = `changes.${id}`;
    await this.serialised(projectId, async () => {
      // Guarded, so a change settled meanwhile is not brought back as a bare time. A rare write: FerretDB scans for it.
      await this.docs.updateOne({ _id: projectId, [field]: { $exists: true } }, { $set: { [`${field}.at`]: at } });
      const known = this.memory?.get(projectId)?.pending.get(id);
      if (known) known.at = at;
    });
  }

  /** Every project's changes recorded before `before` and still not settled. A periodic check: it scans. */
  async olderThan(before: Date): Promise<{ projectId: string; change: PendingChange }[]> {
    const docs = await this.docs.find({}).toArray();
    return docs.flatMap((doc) =>
      changesOf(doc)
        .filter((change) => change.at < before && !this.memory?.get(doc._id)?.settled.has(change.id))
        .map((change) => ({ projectId: doc._id, change })),
    );
  }

  /** Changes recorded and not settled, over the projects the owner holds (a metric); null without the owner's memory. */
  get unsettled(): number | null {
    if (!this.memory) return null;
    let count = 0;
    for (const { pending } of this.memory.values()) count += pending.size;
    return count;
  }

  /** Removes from the database what the owner settled (a clean stop). */
  async writeSettled(): Promise<void> {
    for (const [projectId, remembered] of this.memory ?? []) {
      if (remembered.settled.size === 0) continue;
      await this.serialised(projectId, async () => {
        const settled = [...remembered.settled];
        const unset = unsetOf(settled);
        await this.docs.updateOne({ _id: projectId }, { $unset: unset });
        for (const gone of settled) remembered.settled.delete(gone);
      });
    }
  }

  /** The owner's copy of the project's changes, read once. */
  private async remembered(projectId: string): Promise<RememberedChanges> {
    let known = this.memory!.get(projectId);
    if (known) return known;
    const doc = await this.docs.findOne({ _id: projectId });
    known = this.memory!.get(projectId);
    if (known) return known;
    known = { pending: new Map(doc ? changesOf(doc).map((change) => [change.id, change]) : []), settled: new Set() };
    this.memory!.set(projectId, known);
    return known;
  }
}

/** The `$unset` of settled changes' fields. */
const unsetOf = (ids: readonly string[]): Record<string, ""> =>
  Object.fromEntries(ids.map((id) => [`changes.${id}`, ""]));

function pendingOf(id: string, { k, f, t, at }: StoredChange): PendingChange {
  return { id, identityKeys: k, folds: f.map(({ from, into }) => ({ from, into })), tags: t ?? [], at };
}

function changesOf(doc: ChangesDoc): PendingChange[] {
  return Object.entries(doc.changes ?? {}).map(([id, stored]) => pendingOf(id, stored));
}
