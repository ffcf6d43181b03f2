import type { Engine } from "../../db/engine.js";
import type { Db } from "mongodb";
import { isDuplicateKey } from "../../db/errors.js";
import { ContentionError } from "../../errors.js";
import type { RegisteredTag } from "../rules/tag-record.js";

/** Times a write re-reads the list another instance wrote meanwhile before it gives up. */
const WRITE_ATTEMPTS = 10;

/**
 * `tags` is the project's registry as one JSON string, by id: FerretDB decodes
 * a string in a fraction of the time it takes for 500 records of 8 fields.
 * `version` guards the read-modify-write where several instances write (MongoDB).
 */
interface TagListDoc {
  _id: string;
  version: number;
  tags: string;
}

/**
 * The player_tag_lists collection, `_id` the project id: a copy of the
 * project's player_tags records, so a tag listing is one point read instead
 * of a scan. TagStore writes it after each registry write; a list shorter
 * than the project's tag counter (a registration in flight, or one cut by a
 * crash) is not used, and the start-up repair writes it again from player_tags.
 */
export class TagListStore {
  private readonly lists;

  constructor(
    db: Db,
    private readonly engine: Engine,
  ) {
    this.lists = db.collection<TagListDoc>("player_tag_lists");
  }

  /** The project's tags by id, or null when no list was written. */
  async read(projectId: string): Promise<RegisteredTag[] | null> {
    const doc = await this.lists.findOne({ _id: projectId }, { projection: { tags: 1 } });
    return doc && parseTags(doc.tags);
  }

  /**
   * Writes the list `change` makes of the stored one, called again after
   * each read of the list: a `change` that copies records reads them there, so
   * the last write follows the last registry write it saw (on FerretDB the
   * caller serialises writers in this process; on MongoDB the version guard does).
   */
  async write(
    projectId: string,
    change: (current: RegisteredTag[]) => Promise<RegisteredTag[]>,
  ): Promise<RegisteredTag[]> {
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const doc = await this.lists.findOne({ _id: projectId });
      const next = (await change(doc ? parseTags(doc.tags) : [])).sort((a, b) => a.id - b.id);
      const version = doc?.version ?? 0;
      const filter = this.engine.isolatesUpdates ? { _id: projectId, version } : { _id: projectId };
      const update = { $set: { tags: JSON.stringify(next) }, $inc: { version: 1 } };
      try {
        await this.lists.updateOne(filter, update, { upsert: true });
        return next;
      } catch (error) {
        // The guard no longer matched (another instance wrote the list): read it again.
        if (!isDuplicateKey(error)) throw error;
      }
    }
    throw new ContentionError("tag list: kept changing under the write");
  }
}

function parseTags(json: string): RegisteredTag[] {
  return (JSON.parse(json) as (RegisteredTag & { firstSeenAt: string; lastSeenAt: string })[]).map((tag) => ({
    ...tag,
    firstSeenAt: new Date(tag.firstSeenAt),
    lastSeenAt: new Date(tag.lastSeenAt),
  }));
}
