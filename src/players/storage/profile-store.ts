import type { Db, Filter } from "mongodb";
import { type Engine, throwIfRefused } from "../../db/engine.js";
import { isDuplicateKeyCode } from "../../db/errors.js";
import { projectIdRange, projectScopedId } from "../../db/ids.js";
import { scanProject } from "../../db/project-scan.js";
import type { TraitValue } from "../rules/normalise.js";
import { slotDocument, slotOf, toProfile, writtenSlot, type ProfileDoc } from "./profile-document.js";
import type { ProfileRecord, ProfileSlot, SlotWrite } from "../rules/profile.js";
import { ProfileMemory } from "./profile-memory.js";
import type { ProfileQuery } from "../rules/profile-match.js";

export const PLAYER_PROFILES = "player_profiles";

/** The player_profiles collection: one document per player and project, `_id` `<project>/<identity_key>`. */
export class ProfileStore {
  private readonly profiles;

  private readonly memory: ProfileMemory | null;

  /**
   * Where the engine does not isolate updates (FerretDB 1.24), the version
   * guard buys nothing and costs a slower replace; writes to a profile are
   * serialised in-process instead.
   */
  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.profiles = db.collection<ProfileDoc>(PLAYER_PROFILES);
    this.memory = engine.ownerMemory && new ProfileMemory(engine.ownerMemory);
  }

  /**
   * Where indexes answer queries (MongoDB): a project's profiles by identity key, by trait, and by tag (multikey,
   * in identity key order: tag membership). Elsewhere (FerretDB) none: they would answer nothing there and cost every
   * write.
   */
  async createIndexes(): Promise<void> {
    const indexes: Record<string, 1>[] = [
      { project_id: 1, identity_key: 1 },
      { project_id: 1, trait_index: 1 },
      { project_id: 1, tags: 1, identity_key: 1 },
    ];
    if (!this.engine.queryIndexes) return;
    for (const index of indexes) await this.profiles.createIndex(index);
  }

  /**
   * The profiles of `identityKeys`: from the owner's memory when it holds the
   * project, else read by `_id` the engine's way (src/db/engine.ts). With
   * `fillMemory` (the write path's rounds) the memory is first filled by one
   * scan of the project when it fits, so every later round reads from it.
   */
  async readSlots(
    projectId: string,
    identityKeys: readonly string[],
    { fillMemory = false } = {},
  ): Promise<Map<string, ProfileSlot>> {
    const keys = [...new Set(identityKeys)];
    const memory = this.memory;
    if (fillMemory) await this.filledMemory(projectId);
    // Checked after the fill, with no wait between: a write failing meanwhile may have forgotten the project.
    if (memory?.whole(projectId)) return new Map(keys.map((key) => [key, memory.slot(projectId, key)!]));
    const ids = keys.map((key) => projectScopedId(projectId, key));
    const docs = await this.engine.readByIds(this.profiles, ids);
    return new Map(keys.map((key, i) => [key, slotOf(docs[i])]));
  }

  /**
   * Every live profile of the project from the owner's memory, filled by one
   * scan of the project's profiles the first time; null where there is no such
   * memory (MongoDB) or the project does not fit its budget.
   */
  async liveProfiles(projectId: string): Promise<readonly ProfileRecord[] | null> {
    return (await this.filledMemory(projectId))?.liveProfiles(projectId) ?? null;
  }

  /** Per trait key and value, the players holding it, from the owner's memory (filled as liveProfiles is); else null. */
  async traitHolders(projectId: string, pairs: readonly [string, TraitValue][]): Promise<ReadonlySet<string>[] | null> {
    return (await this.filledMemory(projectId))?.traitHolders(projectId, pairs) ?? null;
  }

  /** Fills the owner's memory of the project's profiles (a start, before it is ready), when it fits. */
  async fillMemory(projectId: string): Promise<void> {
    await this.filledMemory(projectId);
  }

  /** The owner's memory once it holds the whole project (filled by one scan the first time); null otherwise. */
  private async filledMemory(projectId: string): Promise<ProfileMemory | null> {
    const memory = this.memory;
    return memory && (await memory.fill(projectId, () => this.scanSlots(projectId))) ? memory : null;
  }

  private async scanSlots(projectId: string): Promise<Map<string, ProfileSlot>> {
    return new Map(await scanProject(this.profiles, projectId, (doc) => [doc.identity_key, slotOf(doc)] as const));
  }

  /**
   * Writes each profile (or tombstone) if it is still at the version it was
   * read at, in batches the engine takes; returns the indexes of the writes
   * that lost to another writer. The guard is an upsert on `{_id, version}`:
   * a document at another version makes it a duplicate key, reported per
   * statement. On FerretDB, whose writes to a profile are serialised in this
   * process, the filter is `_id` alone.
   */
  async writeSlots(projectId: string, writes: readonly SlotWrite[]): Promise<Set<number>> {
    const operations = writes.map(({ identityKey, readVersion, next }) => {
      const { _id, ...doc } = slotDocument(projectId, identityKey, next, readVersion + 1);
      const filter = this.engine.isolatesUpdates ? { _id, version: readVersion } : { _id };
      return { replaceOne: { filter, replacement: doc, upsert: true } };
    });
    let lost: Set<number>;
    try {
      const failures = await this.engine.writeAll(this.profiles, operations);
      throwIfRefused(
        "profile write",
        failures.filter((failure) => !isDuplicateKeyCode(failure.code)),
      );
      lost = new Set(failures.map((failure) => failure.index));
    } catch (error) {
      this.memory?.forget(projectId);
      throw error;
    }
    this.memory?.written(
      projectId,
      writes.flatMap((write, i) => (lost.has(i) ? [] : [[write.identityKey, writtenSlot(write)] as const])),
    );
    return lost;
  }

  /**
   * One page of the profiles matching `query`, by identity_key, and the number of matches: from the tag and trait
   * indexes on MongoDB, a scan of the collection on FerretDB.
   */
  async matching(
    projectId: string,
    query: ProfileQuery,
    skip: number,
    limit: number,
  ): Promise<{ profiles: ProfileRecord[]; total: number }> {
    const filter = profileFilter(projectId, query);
    const [docs, total] = await Promise.all([
      this.profiles.find(filter).sort({ identity_key: 1 }).skip(skip).limit(limit).toArray(),
      this.profiles.countDocuments(filter),
    ]);
    return { profiles: docs.map(toProfile), total };
  }

  /**
   * The project's live profiles matching `query` in `_id` (so identity key) order, `batch` at a time as the caller
   * consumes them. Where indexes answer queries (MongoDB): pages by `_id` after the last one read, up to the
   * project's highest `_id` at the start. FerretDB reaches its `_id` index only by the project's range alone: one
   * sorted cursor over it, every profile, left to the caller to filter.
   */
  async *inKeyOrder(projectId: string, query: ProfileQuery, batch: number): AsyncGenerator<ProfileRecord> {
    const range = projectIdRange(projectId);
    if (!this.engine.queryIndexes) {
      const cursor = this.profiles
        .find({ _id: range } as Filter<ProfileDoc>)
        .sort({ _id: 1 })
        .batchSize(batch);
      try {
        for await (const doc of cursor) if (!doc.folded_into) yield toProfile(doc);
      } finally {
        await cursor.close();
      }
      return;
    }
    const last = await this.profiles.findOne({ _id: range } as Filter<ProfileDoc>, {
      sort: { _id: -1 },
      projection: { _id: 1 },
    });
    if (!last) return;
    const filter = profileFilter(projectId, query);
    for (let after = range.$gte; ;) {
      const page = { ...filter, _id: { $gt: after, $lte: last._id } } as Filter<ProfileDoc>;
      const docs = await this.profiles.find(page).sort({ _id: 1 }).limit(batch).toArray();
      for (const doc of docs) yield toProfile(doc);
      if (docs.length < batch) return;
      after = docs[docs.length - 1]._id;
    }
  }

  /** The identity keys of every live profile matching `query` (the indexes on MongoDB, a scan on FerretDB). */
  async matchingKeys(projectId: string, query: ProfileQuery): Promise<string[]> {
    const filter = profileFilter(projectId, query);
    const docs = await this.profiles.find(filter, { projection: { identity_key: 1 } }).toArray();
    return docs.map((doc) => doc.identity_key);
  }

  /** How many live profiles carry each of `tags` (where a tag index answers it: MongoDB). */
  async countTagged(projectId: string, tags: readonly string[]): Promise<number[]> {
    return Promise.all(
      tags.map((tag) => this.profiles.countDocuments({ project_id: projectId, tags: tag, folded_into: null })),
    );
  }
}

/** The live profiles of the project matching `query`; user strings only ever as values of `$in`/`$all`/`$nin`. */
function profileFilter(projectId: string, query: ProfileQuery): Filter<ProfileDoc> {
  const filter: Filter<ProfileDoc> = { project_id: projectId, folded_into: null };
  const tags: { $in?: string[]; $all?: string[]; $nin?: string[] } = {};
  if (query.tagsAny) tags.$in = query.tagsAny;
  if (query.tagsAll) tags.$all = query.tagsAll;
  if (query.tagsNone) tags.$nin = query.tagsNone;
  if (Object.keys(tags).length > 0) filter.tags = tags;
  if (query.traits) filter.trait_index = { $all: query.traits };
  // An erasure's marker has no tag or trait: only a query asking for neither needs to leave it out.
  if (!query.tagsAny && !query.tagsAll && !query.traits) filter.erased = { $exists: false };
  return filter;
}
