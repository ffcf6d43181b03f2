import type { Db } from "mongodb";
import { isDuplicateKey } from "../../db/errors.js";
import type { Engine } from "../../db/engine.js";
import { projectIdRange, projectScopedId } from "../../db/ids.js";
import type { ConfigEntry, Json } from "../rules/entry.js";

/** An entry as it is now: its content and the version that made it. */
export interface EntryRecord {
  entry: ConfigEntry;
  version: number;
  updatedAt: Date;
}

/** One change of an entry: what it left (null: a deletion), when, by which API key. */
export interface VersionRecord {
  version: number;
  entry: ConfigEntry | null;
  updatedAt: Date;
  keyId: string;
}

/**
 * An entry as stored, in one JSON string: any JSON object key of a value (`$set`, `a.b`) is then data, never a field
 * path, and the embedded engine reads a string many times faster than the same data as nested fields (1,000
 * entries of 20 rules: 2–3 s as fields on a loaded machine).
 */
interface StoredEntry {
  key: string;
  default_value: Json;
  rules: {
    tags: string[];
    tags_match: "any" | "all";
    tags_none: string[];
    traits: string[];
    rollout_percent: number | null;
    value: Json;
  }[];
  in_launch: boolean;
}

interface EntryDoc {
  _id: string;
  version: number;
  /** A StoredEntry's JSON; null once deleted: the document stays, so the key's versions go on from where they were. */
  entry: string | null;
  updated_at: Date;
}

interface VersionDoc {
  _id: string;
  version: number;
  /** A StoredEntry's JSON, or null: the version deleted the entry. */
  entry: string | null;
  updated_at: Date;
  key_id: string;
}

/** Digits of a version in its document's `_id`, so the ids of one key sort by version. */
const VERSION_DIGITS = 10;

const versionId = (projectId: string, key: string, version: number) =>
  projectScopedId(projectId, `${key}/${String(version).padStart(VERSION_DIGITS, "0")}`);

/**
 * The config_entries collection (an entry's current version, `_id` `<project>/<key>`) and config_versions (every
 * version, `_id` `<project>/<key>/<version>`, never changed once written). A change claims its version by inserting
 * the version's document (unique `_id`), then moves the entry to it: two writers (two instances on MongoDB) never
 * make the same version, and the entry never goes back (guarded by its version where the engine isolates updates;
 * the embedded engine's one owner serialises its writes per project instead).
 */
export class EntryStore {
  private readonly entries;
  private readonly versions;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.entries = db.collection<EntryDoc>("config_entries");
    this.versions = db.collection<VersionDoc>("config_versions");
  }

  /** The project's live entries, by key. */
  async list(projectId: string): Promise<EntryRecord[]> {
    const docs = await this.entries
      .find({ _id: projectIdRange(projectId) })
      .sort({ _id: 1 })
      .toArray();
    return docs.flatMap((doc) => (doc.entry ? [recordOf(doc, doc.entry)] : []));
  }

  /** How many live entries the project has (its limit's count). */
  countLive(projectId: string): Promise<number> {
    return this.entries.countDocuments({ _id: projectIdRange(projectId), entry: { $ne: null } });
  }

  /** The key's last version (0: never written) and its entry (null: none, or deleted). */
  async find(projectId: string, key: string): Promise<{ version: number; record: EntryRecord | null }> {
    const doc = await this.entries.findOne({ _id: projectScopedId(projectId, key) });
    return { version: doc?.version ?? 0, record: doc?.entry ? recordOf(doc, doc.entry) : null };
  }

  /**
   * Makes version `after + 1` of the key, holding `entry` (null: deleted). False when another writer made that
   * version first: its change is then completed here (the entry moved to it) and the caller reads again.
   */
  async write(
    projectId: string,
    key: string,
    after: number,
    change: { entry: ConfigEntry | null; keyId: string; at: Date },
  ): Promise<boolean> {
    const version = after + 1;
    const doc: VersionDoc = {
      _id: versionId(projectId, key, version),
      version,
      entry: change.entry && storedOf(change.entry),
      updated_at: change.at,
      key_id: change.keyId,
    };
    try {
      await this.versions.insertOne(doc);
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      const claimed = await this.versions.findOne({ _id: doc._id });
      if (claimed) await this.moveEntry(projectId, key, claimed);
      return false;
    }
    await this.moveEntry(projectId, key, doc);
    return true;
  }

  /** The entry moved to `doc`'s version, unless it is there or past it already. */
  private async moveEntry(projectId: string, key: string, doc: VersionDoc): Promise<void> {
    const _id = projectScopedId(projectId, key);
    const filter = this.engine.isolatesUpdates ? { _id, version: { $lt: doc.version } } : { _id };
    const set = { version: doc.version, entry: doc.entry, updated_at: doc.updated_at };
    try {
      await this.entries.updateOne(filter, { $set: set }, { upsert: true });
    } catch (error) {
      // The guard did not match an entry already at or past this version, so the upsert met its `_id`.
      if (!isDuplicateKey(error)) throw error;
    }
  }

  /** The key's versions from `newest` down to `oldest`, newest first. */
  async history(projectId: string, key: string, newest: number, oldest: number): Promise<VersionRecord[]> {
    if (newest < oldest) return [];
    const range = { $gte: versionId(projectId, key, oldest), $lte: versionId(projectId, key, newest) };
    const docs = await this.versions.find({ _id: range }).sort({ _id: -1 }).toArray();
    return docs.map(versionOf);
  }

  async version(projectId: string, key: string, version: number): Promise<VersionRecord | null> {
    const doc = await this.versions.findOne({ _id: versionId(projectId, key, version) });
    return doc && versionOf(doc);
  }
}

const recordOf = (doc: EntryDoc, entry: string): EntryRecord => ({
  entry: entryOf(entry),
  version: doc.version,
  updatedAt: doc.updated_at,
});

const versionOf = (doc: VersionDoc): VersionRecord => ({
  version: doc.version,
  entry: doc.entry === null ? null : entryOf(doc.entry),
  updatedAt: doc.updated_at,
  keyId: doc.key_id,
});

function storedOf(entry: ConfigEntry): string {
  const stored: StoredEntry = {
    key: entry.key,
    default_value: entry.defaultValue,
    rules: entry.rules.map(({ cohort, rolloutPercent, value }) => ({
      tags: cohort.tags,
      tags_match: cohort.tagsMatch,
      tags_none: cohort.tagsNone,
      traits: cohort.traits,
      rollout_percent: rolloutPercent,
      value,
    })),
    in_launch: entry.inLaunch,
  };
  return JSON.stringify(stored);
}

function entryOf(text: string): ConfigEntry {
  const stored = JSON.parse(text) as StoredEntry;
  return {
    key: stored.key,
    defaultValue: stored.default_value,
    rules: stored.rules.map((rule) => ({
      cohort: { tags: rule.tags, tagsMatch: rule.tags_match, tagsNone: rule.tags_none, traits: rule.traits },
      rolloutPercent: rule.rollout_percent,
      value: rule.value,
    })),
    inLaunch: stored.in_launch,
  };
}
