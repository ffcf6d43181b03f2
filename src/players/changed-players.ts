import type { AnyBulkWriteOperation, Collection, Db } from "mongodb";
import type { Engine } from "../db/engine.js";
import { isDuplicateKeyCode, unavailableOf } from "../db/errors.js";
import { KeyedLock } from "../db/keyed-lock.js";
import {
  byProject,
  type ChangedPlayer,
  cleanStopWrite,
  hashOf,
  leave,
  newStamp,
  pageWrite,
  placeOf,
  projectRange,
  type RecordDoc,
  recordOf,
  type RememberedProject,
  storedOf,
} from "./changed-player-documents.js";

export type { ChangedPlayer } from "./changed-player-documents.js";

/**
 * What a players round changes, recorded before it writes: the players whose
 * cohorts (tags or traits) move, the folds it makes, and the tags whose
 * membership it moves (their players are `identityKeys` and the folds' sources).
 */
export interface PlayerChange {
  identityKeys: string[];
  folds: { from: string; into: string }[];
  tags: string[];
  /** Players an erasure removes, and the queue segment that takes their histories out. */
  erasure?: { identityKeys: string[]; seq: number };
}

/** A project's changed players recorded before `before`, and every tag whose membership their rounds moved. */
export interface StaleChanges {
  projectId: string;
  players: ChangedPlayer[];
  tags: string[];
}

/**
 * The record of changed players (collection `player_changes`): the one way
 * the rest of the service follows the players' writes. A round records, before
 * it writes a profile, one entry per player it changes (its latest stamp,
 * superseding an earlier one) and the tags it moves; the resync it queues
 * after its membership carries the stamp and settles those entries once the
 * apply worker has moved their event histories. So the record holds at most
 * one live entry per player of the project, whatever the rounds or the event
 * backlog: the as-of-now correction of charts reads one entry per changed
 * player, and the repairs after a crash (membership, and the resync queued
 * again) read what is older than a grace.
 *
 * The owner of an embedded database keeps the project's record in memory once
 * read (charts read it there) and writes each record into a page of its own
 * (changed-player-documents.ts): what a call writes is bounded by its change, not
 * by the players waiting. Elsewhere a record is spread over SHARDS documents
 * by `_id` (`<project>/<shard>`), field by field.
 */
export class ChangedPlayers {
  private readonly docs: Collection<RecordDoc>;
  /** One writer of a project's documents at a time where the engine does not isolate updates (FerretDB's one owner). */
  private readonly locks: KeyedLock | null;
  private readonly memory: Map<string, RememberedProject> | null;
  /**
   * Without the owner's memory on a database an owner may have written (its pages), an entry is found in any
   * document of the project (a scan there either way: FerretDB scans for an `_id` filter with more in it).
   */
  private readonly anyDocument: boolean;
  /** The owner read every project's record once (the repairs' scan). */
  private allRemembered = false;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.docs = db.collection<RecordDoc>("player_changes");
    this.locks = engine.isolatesUpdates ? null : new KeyedLock(unavailableOf);
    this.memory = engine.ownerMemory ? new Map() : null;
    this.anyDocument = !this.memory && engine.soleWriter;
  }

  /** Records a change before it is made; its stamp. */
  async record(projectId: string, change: PlayerChange, at: Date): Promise<string> {
    const stamp = newStamp();
    const { identityKeys: erased = [], seq: erasedAt = null } = change.erasure ?? {};
    const players: ChangedPlayer[] = [
      ...change.identityKeys.map((identityKey) => ({ identityKey, into: null, stamp, at, erasedAt: null })),
      ...change.folds.map(({ from, into }) => ({ identityKey: from, into, stamp, at, erasedAt: null })),
      ...erased.map((identityKey) => ({ identityKey, into: null, stamp, at, erasedAt })),
    ];
    await this.serialised(projectId, async () => {
      if (players.length === 0) return;
      if (!this.memory) return this.write(this.shardStatements(projectId, players, change.tags));
      const project = await this.remembered(projectId);
      // An erasure not taken out yet stays marked under a later change (elsewhere the stored mark is kept, see below).
      for (const player of players) player.erasedAt ??= project.entries.get(player.identityKey)?.erasedAt ?? null;
      const { statements, apply } = pageWrite(projectId, project, players, change.tags);
      await this.write(statements);
      apply();
    });
    return stamp;
  }

  /** The project's changed players, one entry each. */
  async waiting(projectId: string): Promise<ChangedPlayer[]> {
    const { entries } = this.memory ? await this.remembered(projectId) : recordOf(await this.readProject(projectId));
    return [...entries.values()];
  }

  /** A resync carrying `stamp` is applied for `identityKeys`: the entries it covers are settled. */
  async settle(projectId: string, stamp: string, identityKeys: readonly string[]): Promise<void> {
    await this.serialised(projectId, async () => {
      if (this.memory) {
        // In memory: the page keeps the field until a record rewrites or blanks it, or a clean stop.
        const project = await this.remembered(projectId);
        for (const key of identityKeys) {
          if (project.entries.get(key)?.stamp !== stamp) continue;
          project.entries.delete(key);
          leave(project, key);
        }
        return;
      }
      // Guarded by the stamp: a later change of the player recorded meanwhile stays.
      await this.write(
        identityKeys.map((key) => {
          const { field } = placeOf(projectId, key);
          const filter = { _id: this.holderOf(projectId, key), [`p.${field}.s`]: stamp };
          return { updateOne: { filter, update: { $unset: { [`p.${field}`]: "" } } } };
        }),
      );
    });
  }

  /** `players` are queued again at `at` (those not changed since), under the stamp answered: the next check waits. */
  async restamp(projectId: string, players: readonly ChangedPlayer[], at: Date): Promise<string> {
    const stamp = newStamp();
    await this.serialised(projectId, async () => {
      if (this.memory) {
        const project = await this.remembered(projectId);
        const known = players.map((player) => project.entries.get(player.identityKey));
        const moved = known.filter((entry, i) => entry?.stamp === players[i].stamp) as ChangedPlayer[];
        if (moved.length === 0) return;
        const restamped = moved.map((entry) => ({ ...entry, stamp, at }));
        const { statements, apply } = pageWrite(projectId, project, restamped, []);
        await this.write(statements);
        apply();
        return;
      }
      await this.write(
        players.map((player) => {
          const { field } = placeOf(projectId, player.identityKey);
          const filter = { _id: this.holderOf(projectId, player.identityKey), [`p.${field}.s`]: player.stamp };
          return { updateOne: { filter, update: { $set: { [`p.${field}.s`]: stamp, [`p.${field}.a`]: at } } } };
        }),
      );
    });
    return stamp;
  }

  /** Per project, the changed players recorded before `before` (a repair's work), with the tags their rounds moved. */
  async stale(before: Date): Promise<StaleChanges[]> {
    if (this.memory) await this.rememberAll();
    const projects =
      this.memory ??
      new Map([...byProject(await this.docs.find({}).toArray())].map(([id, docs]) => [id, recordOf(docs)]));
    const stale: StaleChanges[] = [];
    for (const [projectId, { entries, moved }] of projects) {
      const players = [...entries.values()].filter((player) => player.at < before);
      if (players.length > 0) stale.push({ projectId, players, tags: [...moved] });
    }
    return stale;
  }

  /** Changed players waiting, over the projects the owner holds (a metric); null without the owner's memory. */
  get unsettled(): number | null {
    if (!this.memory) return null;
    let count = 0;
    for (const { entries } of this.memory.values()) count += entries.size;
    return count;
  }

  /** Removes from the database what the owner settled (a clean stop). */
  async writeSettled(): Promise<void> {
    for (const [projectId, project] of this.memory ?? []) {
      await this.serialised(projectId, async () => {
        const { statements, apply } = cleanStopWrite(project);
        await this.write(statements);
        apply();
      });
    }
  }

  /** Without the owner: a statement per shard the players fall in, their entries set field by field, and the tags. */
  private shardStatements(
    projectId: string,
    players: readonly ChangedPlayer[],
    tags: readonly string[],
  ): AnyBulkWriteOperation<RecordDoc>[] {
    const sets = new Map<string, { $set: Record<string, unknown>; $unset: Record<string, ""> }>();
    for (const player of players) {
      const { shard, field } = placeOf(projectId, player.identityKey);
      const update = sets.get(shard) ?? { $set: {}, $unset: {} };
      // Field by field: a stored erasure mark (`e`) stays under a later change; a fold's target does not.
      for (const [name, value] of Object.entries(storedOf(player))) update.$set[`p.${field}.${name}`] = value;
      if (player.into === null) update.$unset[`p.${field}.i`] = "";
      for (const tag of tags) update.$set[`t.${hashOf(tag)}`] = tag;
      sets.set(shard, update);
    }
    return [...sets].map(([shard, { $set, $unset }]) => {
      const update = { $set, ...(Object.keys($unset).length > 0 && { $unset }) };
      return { updateOne: { filter: { _id: shard }, update, upsert: true } };
    });
  }

  /** Where a player's entry is looked for without the owner: its shard, or any document of the project. */
  private holderOf(projectId: string, identityKey: string) {
    return this.anyDocument ? projectRange(projectId) : placeOf(projectId, identityKey).shard;
  }

  /** Writes `statements` in one command where they fit; a statement refused fails the write. */
  private async write(statements: AnyBulkWriteOperation<RecordDoc>[]): Promise<void> {
    if (statements.length === 0) return;
    const failures = await this.engine.writeAll(this.docs, statements);
    // Two first upserts of one shard side by side (MongoDB): the loser's statement runs again on the document there.
    const again = failures.filter((failure) => isDuplicateKeyCode(failure.code)).map((f) => statements[f.index]);
    const refused = failures.find((failure) => !isDuplicateKeyCode(failure.code));
    if (refused) throw new Error(`player_changes write failed with code ${refused.code}`);
    if (again.length > 0) await this.write(again);
  }

  private serialised<T>(projectId: string, write: () => Promise<T>): Promise<T> {
    return this.locks ? this.locks.run([projectId], write) : write();
  }

  private readProject(projectId: string): Promise<RecordDoc[]> {
    // One read (by the `_id` index on MongoDB).
    return this.docs.find({ _id: projectRange(projectId) }).toArray();
  }

  /** The owner's copy of the project's record, read once. */
  private async remembered(projectId: string): Promise<RememberedProject> {
    const known = this.memory!.get(projectId);
    if (known) return known;
    const project = recordOf(await this.readProject(projectId));
    if (!this.memory!.has(projectId)) this.memory!.set(projectId, project);
    return this.memory!.get(projectId)!;
  }

  /** Every project's record in the owner's memory: one read of the collection, once. */
  private async rememberAll(): Promise<void> {
    if (this.allRemembered) return;
    for (const [projectId, docs] of byProject(await this.docs.find({}).toArray())) {
      if (!this.memory!.has(projectId)) this.memory!.set(projectId, recordOf(docs));
    }
    this.allRemembered = true;
  }
}
