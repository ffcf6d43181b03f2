import type { Db } from "mongodb";

/** Per project, as earlier versions kept it: `seen.t<tag id>` (last given; the counts are rebuilt). */
interface TagStatsDoc {
  _id: string;
  seen?: Record<string, Date>;
}

/**
 * The player_tag_stats collection, where earlier versions kept each project's
 * tag counts and last-given times. They live beside the membership now
 * (MembershipStore), so a round writes both in one command; the rebuild that
 * the new layout starts carries the last-given times over, then drops this.
 */
export class LegacyTagStatsStore {
  private readonly stats;

  constructor(db: Db) {
    this.stats = db.collection<TagStatsDoc>("player_tag_stats");
  }

  /** Per project, the last-given time of each tag id. */
  async lastGiven(): Promise<Map<string, Map<number, Date>>> {
    const docs = await this.stats.find({}).toArray();
    return new Map(
      docs.map((doc) => [
        doc._id,
        new Map(Object.entries(doc.seen ?? {}).map(([key, at]) => [Number(key.slice(1)), at])),
      ]),
    );
  }

  async drop(): Promise<void> {
    await this.stats.deleteMany({});
  }
}
