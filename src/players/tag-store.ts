import type { Db, Filter } from "mongodb";
import { projectScopedId } from "../db/ids.js";
import { insertAllNew } from "../db/insert-all-new.js";

export interface TagRecord {
  id: number;
  tag: string;
  label: string;
  category: string | null;
  description: string | null;
  isHidden: boolean;
  playersCount: number;
  firstSeenAt: Date;
  lastSeenAt: Date;
}

export interface TagMetadata {
  label?: string;
  category?: string | null;
  description?: string | null;
  isHidden?: boolean;
}

export interface TagDoc {
  _id: string;
  project_id: string;
  id: number;
  tag: string;
  label: string;
  category: string | null;
  description: string | null;
  is_hidden: boolean;
  players_count: number;
  first_seen_at: Date;
  last_seen_at: Date;
}

export const PLAYER_TAGS = "player_tags";

/** The player_tags collection: each project's tag registry, `_id` `<project>/<tag>`. */
export class TagStore {
  private readonly tags;

  constructor(db: Db) {
    this.tags = db.collection<TagDoc>(PLAYER_TAGS);
  }

  async createIndexes(): Promise<void> {
    await this.tags.createIndex({ project_id: 1, tag: 1 }, { unique: true });
    await this.tags.createIndex({ project_id: 1, id: 1 }, { unique: true });
    await this.tags.createIndex({ project_id: 1, category: 1 });
  }

  async findRegistered(projectId: string, tags: readonly string[]): Promise<Set<string>> {
    if (tags.length === 0) return new Set();
    const docs = await this.tags
      .find({ project_id: projectId, tag: { $in: [...tags] } }, { projection: { tag: 1 } })
      .toArray();
    return new Set(docs.map((doc) => doc.tag));
  }

  /**
   * Registers tags with ids from `firstId` on; returns those inserted. A tag
   * missing from the answer was registered meanwhile by another writer, and
   * its slot must be given back.
   */
  async insertTags(
    projectId: string,
    firstId: number,
    tags: readonly { tag: string; label: string }[],
    now: Date,
  ): Promise<string[]> {
    const docs = tags.map(({ tag, label }, i) =>
      tagDocument(projectId, {
        id: firstId + i,
        tag,
        label,
        category: null,
        description: null,
        isHidden: false,
        playersCount: 0,
        firstSeenAt: now,
        lastSeenAt: now,
      }),
    );
    const failed = await insertAllNew(this.tags, docs);
    return tags.filter((_, i) => !failed.has(i)).map(({ tag }) => tag);
  }

  /** Applies players_count changes (with `$inc`, never by counting profiles) and stamps tags players were given. */
  async adjustCounts(
    projectId: string,
    deltas: ReadonlyMap<string, number>,
    given: readonly string[],
    now: Date,
  ): Promise<void> {
    const byDelta = new Map<number, string[]>();
    for (const [tag, delta] of deltas) byDelta.set(delta, [...(byDelta.get(delta) ?? []), tag]);
    for (const [delta, tags] of byDelta) {
      await this.tags.updateMany(
        { project_id: projectId, tag: { $in: tags } },
        delta > 0
          ? { $inc: { players_count: delta }, $set: { last_seen_at: now } }
          : { $inc: { players_count: delta } },
      );
    }
    const stampOnly = given.filter((tag) => !((deltas.get(tag) ?? 0) > 0));
    if (stampOnly.length > 0) {
      await this.tags.updateMany({ project_id: projectId, tag: { $in: stampOnly } }, { $set: { last_seen_at: now } });
    }
  }

  async findTag(projectId: string, tag: string): Promise<TagRecord | null> {
    const doc = await this.tags.findOne({ _id: projectScopedId(projectId, tag) });
    return doc && toTag(doc);
  }

  /** `textPattern` is an already escaped regular expression, matched case-insensitively against tag and label. */
  async listTags(
    projectId: string,
    query: { textPattern?: string; category?: string | null },
    skip: number,
    limit: number,
  ): Promise<{ tags: TagRecord[]; total: number }> {
    const filter: Filter<TagDoc> = { project_id: projectId };
    if (query.category !== undefined) filter.category = query.category;
    if (query.textPattern !== undefined) {
      const match = { $regex: query.textPattern, $options: "i" };
      filter.$or = [{ tag: match }, { label: match }];
    }
    const [docs, total] = await Promise.all([
      this.tags.find(filter).sort({ id: 1 }).skip(skip).limit(limit).toArray(),
      this.tags.countDocuments(filter),
    ]);
    return { tags: docs.map(toTag), total };
  }

  async categories(projectId: string): Promise<string[]> {
    const values = await this.tags.distinct("category", { project_id: projectId });
    return values.filter((value): value is string => typeof value === "string").sort();
  }

  async updateMetadata(projectId: string, tag: string, metadata: TagMetadata): Promise<TagRecord | null> {
    const set: Partial<TagDoc> = {};
    if (metadata.label !== undefined) set.label = metadata.label;
    if (metadata.category !== undefined) set.category = metadata.category;
    if (metadata.description !== undefined) set.description = metadata.description;
    if (metadata.isHidden !== undefined) set.is_hidden = metadata.isHidden;
    if (Object.keys(set).length > 0) await this.tags.updateOne({ _id: projectScopedId(projectId, tag) }, { $set: set });
    return this.findTag(projectId, tag);
  }
}

/** The stored shape of a tag record. */
export function tagDocument(projectId: string, tag: TagRecord): TagDoc {
  return {
    _id: projectScopedId(projectId, tag.tag),
    project_id: projectId,
    id: tag.id,
    tag: tag.tag,
    label: tag.label,
    category: tag.category,
    description: tag.description,
    is_hidden: tag.isHidden,
    players_count: tag.playersCount,
    first_seen_at: tag.firstSeenAt,
    last_seen_at: tag.lastSeenAt,
  };
}

function toTag(doc: TagDoc): TagRecord {
  return {
    id: doc.id,
    tag: doc.tag,
    label: doc.label,
    category: doc.category,
    description: doc.description,
    isHidden: doc.is_hidden,
    playersCount: doc.players_count,
    firstSeenAt: doc.first_seen_at,
    lastSeenAt: doc.last_seen_at,
  };
}
