import type { Db } from "mongodb";

/** Per project: players_count and last_seen_at of each tag, under `t<tag id>` (tags may hold a `.`; ids never do). */
interface TagStatsDoc {
  _id: string;
  counts: Record<string, number>;
  seen: Record<string, Date>;
}

export interface TagStats {
  counts: Map<number, number>;
  seen: Map<number, Date>;
}

const field = (tagId: number) => `t${tagId}`;

/**
 * The player_tag_stats collection, `_id` the project id: one document per
 * project, so a call changes every count it moves with one statement and a
 * tag listing reads every count with one point read. Counts move by the
 * membership changes of the same write path; the repair pass sets them to
 * the membership's size.
 */
export class TagStatsStore {
  private readonly stats;

  constructor(db: Db) {
    this.stats = db.collection<TagStatsDoc>("player_tag_stats");
  }

  async read(projectId: string): Promise<TagStats> {
    const doc = await this.stats.findOne({ _id: projectId });
    const parse = <T>(record: Record<string, T> | undefined) =>
      new Map(Object.entries(record ?? {}).map(([key, value]) => [Number(key.slice(1)), value]));
    return { counts: parse(doc?.counts), seen: parse(doc?.seen) };
  }

  /** Adds `deltas` to the counts and moves last_seen_at of `given` tags to `now` (never back). */
  async change(projectId: string, deltas: ReadonlyMap<number, number>, given: readonly number[], now: Date) {
    if (deltas.size === 0 && given.length === 0) return;
    const inc = Object.fromEntries([...deltas].map(([id, delta]) => [`counts.${field(id)}`, delta]));
    const max = Object.fromEntries(given.map((id) => [`seen.${field(id)}`, now]));
    const update: Record<string, object> = {};
    if (deltas.size > 0) update.$inc = inc;
    if (given.length > 0) update.$max = max;
    await this.stats.updateOne({ _id: projectId }, update, { upsert: true });
  }

  /** Sets the counts of `counts`' tags (the repair pass). */
  async setCounts(projectId: string, counts: ReadonlyMap<number, number>): Promise<void> {
    if (counts.size === 0) return;
    const set = Object.fromEntries([...counts].map(([id, n]) => [`counts.${field(id)}`, n]));
    await this.stats.updateOne({ _id: projectId }, { $set: set }, { upsert: true });
  }
}
