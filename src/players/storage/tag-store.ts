import type { Engine } from "../../db/engine.js";
import type { Db } from "mongodb";
import { projectScopedId } from "../../db/ids.js";
import { insertAllNew } from "../../db/insert-all-new.js";
import { sideBySide } from "../../db/gate.js";
import { TagListStore } from "./tag-list-store.js";
import type { RegisteredTag } from "../rules/tag-record.js";

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
  first_seen_at: Date;
  last_seen_at: Date;
}

export const PLAYER_TAGS = "player_tags";

/**
 * The player_tags collection: each project's tag registry, `_id`
 * `<project>/<tag>`, and its copy in one document per project for listings
 * (TagListStore), written after each registry write here.
 */
export class TagStore {
  private readonly tags;
  private readonly list;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.tags = db.collection<TagDoc>(PLAYER_TAGS);
    this.list = new TagListStore(db, engine);
  }

  async createIndexes(): Promise<void> {
    await this.tags.createIndex({ project_id: 1, tag: 1 }, { unique: true });
    await this.tags.createIndex({ project_id: 1, id: 1 }, { unique: true });
    await this.tags.createIndex({ project_id: 1, category: 1 });
  }

  /** The ids of the registered ones among `tags`, read side by side by `_id`. */
  async findIds(projectId: string, tags: readonly string[]): Promise<Map<string, number>> {
    const docs = await sideBySide(tags, (tag) =>
      this.tags.findOne({ _id: projectScopedId(projectId, tag) }, { projection: { id: 1 } }),
    );
    return new Map(tags.flatMap((tag, i) => (docs[i] ? [[tag, docs[i].id] as const] : [])));
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
        firstSeenAt: now,
        lastSeenAt: now,
      }),
    );
    const failed = await insertAllNew(this.engine, this.tags, docs);
    const inserted = docs.filter((_, i) => !failed.has(i)).map(toTag);
    if (inserted.length > 0) await this.list.write(projectId, async (current) => withNew(current, inserted));
    return inserted.map(({ tag }) => tag);
  }

  async findTag(projectId: string, tag: string): Promise<RegisteredTag | null> {
    const doc = await this.tags.findOne({ _id: projectScopedId(projectId, tag) });
    return doc && toTag(doc);
  }

  /** The project's tags by id from their one-document copy (null when none was written); it may lag a registration. */
  async listed(projectId: string): Promise<RegisteredTag[] | null> {
    return this.list.read(projectId);
  }

  /** Writes the one-document copy from the records (the start-up repair); returns the records. */
  async rewriteList(projectId: string): Promise<RegisteredTag[]> {
    return this.list.write(projectId, () => this.listAll(projectId));
  }

  /** Every tag of the project, by id, from its records: at most the project's 500, by a scan of player_tags on FerretDB. */
  async listAll(projectId: string): Promise<RegisteredTag[]> {
    const docs = await this.tags.find({ project_id: projectId }).sort({ id: 1 }).toArray();
    return docs.map(toTag);
  }

  async updateMetadata(projectId: string, tag: string, metadata: TagMetadata): Promise<RegisteredTag | null> {
    const set: Partial<TagDoc> = {};
    if (metadata.label !== undefined) set.label = metadata.label;
    if (metadata.category !== undefined) set.category = metadata.category;
    if (metadata.description !== undefined) set.description = metadata.description;
    if (metadata.isHidden !== undefined) set.is_hidden = metadata.isHidden;
    if (Object.keys(set).length > 0) {
      await this.tags.updateOne({ _id: projectScopedId(projectId, tag) }, { $set: set });
      await this.copyToList(projectId, [tag]);
    }
    return this.findTag(projectId, tag);
  }

  /** Puts `tags`' records, as they are now, into the project's list. */
  private async copyToList(projectId: string, tags: readonly string[]): Promise<void> {
    await this.list.write(projectId, async (current) => {
      const records = await sideBySide(tags, (tag) => this.findTag(projectId, tag));
      const byTag = new Map(current.map((record) => [record.tag, record]));
      for (const record of records) if (record) byTag.set(record.tag, record);
      return [...byTag.values()];
    });
  }
}

/**
 * `current` with the records just inserted that it lacks. One it holds was put there after the insert (a metadata
 * update, or the repair's copy of the records), so it is kept: no read of player_tags is needed.
 */
function withNew(current: RegisteredTag[], inserted: readonly RegisteredTag[]): RegisteredTag[] {
  const listed = new Set(current.map((record) => record.tag));
  return [...current, ...inserted.filter((record) => !listed.has(record.tag))];
}

/** The stored shape of a tag record. */
export function tagDocument(projectId: string, tag: RegisteredTag): TagDoc {
  return {
    _id: projectScopedId(projectId, tag.tag),
    project_id: projectId,
    id: tag.id,
    tag: tag.tag,
    label: tag.label,
    category: tag.category,
    description: tag.description,
    is_hidden: tag.isHidden,
    first_seen_at: tag.firstSeenAt,
    last_seen_at: tag.lastSeenAt,
  };
}

function toTag(doc: TagDoc): RegisteredTag {
  return {
    id: doc.id,
    tag: doc.tag,
    label: doc.label,
    category: doc.category,
    description: doc.description,
    isHidden: doc.is_hidden,
    firstSeenAt: doc.first_seen_at,
    lastSeenAt: doc.last_seen_at,
  };
}
