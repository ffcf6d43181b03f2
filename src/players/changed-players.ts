import type { AnyBulkWriteOperation, Collection, Db } from "mongodb";
import type { Engine } from "../db/engine.js";
import { isDuplicateKeyCode, unavailableOf } from "../db/errors.js";
import { KeyedLock } from "../db/keyed-lock.js";
import {
  addTo,
  byProject,
  entriesOf,
  hashOf,
  newStamp,
  placeOf,
  recordOf,
  storedOf,
  type ChangedPlayer,
  type RememberedProject,
  type ShardDoc,
} from "./changed-player-shards.js";

export type { ChangedPlayer } from "./changed-player-shards.js";

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
 * overwriting an earlier one) and the tags it moves; the resync it queues
 * after its membership carries the stamp and settles those entries once the
 * apply worker has moved their event histories. So the record holds at most
 * one entry per player of the project, whatever the rounds or the event
 * backlog, spread over SHARDS documents by `_id` (`<project>/<shard>`):
 * the as-of-now correction of charts reads one entry per changed player,
 * and the repairs after a crash (membership, and the resync queued again)
 * read what is older than a grace.
 *
 * The owner of an embedded database keeps the project's record in memory once
 * read: charts read it there, and a settled entry leaves the database with the
 * project's next record (the same command), or at a clean stop.
 */
export class ChangedPlayers {
  private readonly docs: Collection<ShardDoc>;
  /** One writer of a project's documents at a time where the engine does not isolate updates (FerretDB's one owner). */
  private readonly locks: KeyedLock | null;
  private readonly memory: Map<string, RememberedProject> | null;
  /** The owner read every project's record once (the repairs' scan). */
  private allRemembered = false;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.docs = db.collection<ShardDoc>("player_changes");
    this.locks = engine.isolatesUpdates ? null : new KeyedLock(unavailableOf);
    this.memory = engine.ownerMemory ? new Map() : null;
  }

  /** Records a change before it is made (with the owner's settled entries removed in the same command); its stamp. */
  async record(projectId: string, change: PlayerChange, at: Date): Promise<string> {
    const stamp = newStamp();
    const { identityKeys: erased = [], seq: erasedAt = null } = change.erasure ?? {};
    const players: ChangedPlayer[] = [
      ...change.identityKeys.map((identityKey) => ({ identityKey, into: null, stamp, at, erasedAt: null })),
      ...change.folds.map(({ from, into }) => ({ identityKey: from, into, stamp, at, erasedAt: null })),
      ...erased.map((identityKey) => ({ identityKey, into: null, stamp, at, erasedAt })),
    ];
    await this.serialised(projectId, async () => {
      const project = this.memory && (await this.remembered(projectId));
      // An erasure not taken out yet stays marked under a later change (MongoDB: the stored mark is kept, see below).
      for (const player of players) player.erasedAt ??= project?.entries.get(player.identityKey)?.erasedAt ?? null;
      const sets = new Map<string, Record<string, unknown>>();
      for (const player of players) {
        const { shard, field } = placeOf(projectId, player.identityKey);
        const set = sets.get(shard) ?? {};
        // Field by field: a stored erasure mark (`e`) stays under a later change; a fold's target does not.
        for (const [name, value] of Object.entries(storedOf(player))) set[`p.${field}.${name}`] = value;
        if (player.into === null) set[`p.${field}.i`] = UNSET;
        for (const tag of change.tags) set[`t.${hashOf(tag)}`] = tag;
        sets.set(shard, set);
      }
      await this.write(this.statements(projectId, sets, project));
      if (!project) return;
      project.settled.clear();
      for (const [shard, set] of sets) {
        for (const [path, value] of Object.entries(set))
          if (path.startsWith("t.")) addTo(project.tags, shard, value as string);
      }
      for (const player of players) project.entries.set(player.identityKey, player);
    });
    return stamp;
  }

  /** The project's changed players, one entry each. */
  async waiting(projectId: string): Promise<ChangedPlayer[]> {
    if (this.memory) return [...(await this.remembered(projectId)).entries.values()];
    return (await this.readProject(projectId)).flatMap(entriesOf);
  }

  /** A resync carrying `stamp` is applied for `identityKeys`: the entries it covers are settled. */
  async settle(projectId: string, stamp: string, identityKeys: readonly string[]): Promise<void> {
    await this.serialised(projectId, async () => {
      if (this.memory) {
        const project = await this.remembered(projectId);
        for (const key of identityKeys) {
          if (project.entries.get(key)?.stamp !== stamp) continue;
          project.entries.delete(key);
          const { shard, field } = placeOf(projectId, key);
          addTo(project.settled, shard, field);
        }
        return;
      }
      // Guarded by the stamp: a later change of the player recorded meanwhile stays.
      await this.write(
        identityKeys.map((key) => {
          const { shard, field } = placeOf(projectId, key);
          return {
            updateOne: { filter: { _id: shard, [`p.${field}.s`]: stamp }, update: { $unset: { [`p.${field}`]: "" } } },
          };
        }),
      );
    });
  }

  /** `players` are queued again at `at` (those not changed since), under the stamp answered: the next check waits. */
  async restamp(projectId: string, players: readonly ChangedPlayer[], at: Date): Promise<string> {
    const stamp = newStamp();
    await this.serialised(projectId, async () => {
      const project = this.memory && (await this.remembered(projectId));
      await this.write(
        players.map((player) => {
          const { shard, field } = placeOf(projectId, player.identityKey);
          const filter = { _id: shard, [`p.${field}.s`]: player.stamp };
          return { updateOne: { filter, update: { $set: { [`p.${field}.s`]: stamp, [`p.${field}.a`]: at } } } };
        }),
      );
      for (const player of players) {
        const known = project?.entries.get(player.identityKey);
        if (known?.stamp === player.stamp) Object.assign(known, { stamp, at });
      }
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
    for (const [projectId, { entries, tags }] of projects) {
      const players = [...entries.values()].filter((player) => player.at < before);
      const moved = new Set([...tags.values()].flatMap((set) => [...set]));
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
      if (project.settled.size === 0) continue;
      await this.serialised(projectId, async () => {
        await this.write(this.statements(projectId, new Map(), project));
        project.settled.clear();
      });
    }
  }

  /**
   * A statement per shard: its new entries and tags, and the owner's settled fields unset (with the shard's tags
   * once nothing of it is left).
   */
  private statements(
    projectId: string,
    sets: ReadonlyMap<string, Record<string, unknown>>,
    project: RememberedProject | null,
  ): AnyBulkWriteOperation<ShardDoc>[] {
    const shards = new Set([...sets.keys(), ...(project?.settled.keys() ?? [])]);
    const occupied = new Set([...(project?.entries.keys() ?? [])].map((key) => placeOf(projectId, key).shard));
    return [...shards].map((shard) => {
      const set = sets.get(shard);
      const unset: Record<string, ""> = {};
      for (const [path, value] of Object.entries(set ?? {})) if (value === UNSET) unset[path] = "";
      const setNow = Object.fromEntries(Object.entries(set ?? {}).filter(([, value]) => value !== UNSET));
      for (const field of project?.settled.get(shard) ?? []) if (!set?.[`p.${field}.k`]) unset[`p.${field}`] = "";
      // Nothing of the shard is left: neither are the tags its rounds moved (the owner's copy keeps them till a start).
      if (!set && !occupied.has(shard)) unset.t = "";
      const update = { ...(set && { $set: setNow }), ...(Object.keys(unset).length > 0 && { $unset: unset }) };
      return { updateOne: { filter: { _id: shard }, update, upsert: set !== undefined } };
    });
  }

  /** Writes `statements` in one command where they fit; a statement refused fails the write. */
  private async write(statements: AnyBulkWriteOperation<ShardDoc>[]): Promise<void> {
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

  private readProject(projectId: string): Promise<ShardDoc[]> {
    // "0" follows "/": every shard of the project and nothing else, one read (by the `_id` index on MongoDB).
    return this.docs.find({ _id: { $gte: `${projectId}/`, $lt: `${projectId}0` } }).toArray();
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

/** A field `record` removes rather than sets. */
const UNSET = Symbol("unset");
