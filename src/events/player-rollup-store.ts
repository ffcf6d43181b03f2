import type { Db } from "mongodb";
import { projectScopedId } from "../db/ids.js";
import { sideBySide } from "../db/side-by-side.js";
import { absorb, type AbsorbOptions, type DocumentChange, type RollupDoc } from "./absorb.js";

/** Per day, events per name field (see names.ts). */
export type DayCounts = Record<string, Record<string, number>>;

/** One player's history of events, and the cohorts it is counted in. */
export interface PlayerRollup {
  identityKey: string;
  days: DayCounts;
  /** Cohort ids ("t/<tag>", "r/<trait>") the history is counted in now. */
  cohorts: string[];
  /** Set once a device's history moved to a player. */
  foldedInto: string | null;
}

interface PlayerRollupDoc extends RollupDoc {
  _id: string;
  project_id: string;
  identity_key: string;
  days?: DayCounts;
  cohorts?: string[];
  /** The player's trait keys as of the last segment that touched it. */
  trait_keys?: string[];
  folded_into?: string | null;
  hw: number;
}

export const playerRollupId = (projectId: string, identityKey: string): string =>
  projectScopedId(projectId, identityKey);

/** The event_player_rollups collection: per player, daily event counts by name. */
export class PlayerRollupStore {
  private readonly rollups;
  /** The same collection, as absorb() writes it. */
  private readonly writes;

  constructor(db: Db) {
    this.rollups = db.collection<PlayerRollupDoc>("event_player_rollups");
    this.writes = db.collection<RollupDoc>("event_player_rollups");
  }

  /** Point reads side by side (see src/db/side-by-side.ts). */
  async read(projectId: string, identityKeys: readonly string[]): Promise<Map<string, PlayerRollup>> {
    const docs = await sideBySide(identityKeys, (key) => this.rollups.findOne({ _id: playerRollupId(projectId, key) }));
    const found = new Map<string, PlayerRollup>();
    for (const doc of docs) {
      if (doc) {
        found.set(doc.identity_key, {
          identityKey: doc.identity_key,
          days: doc.days ?? {},
          cohorts: doc.cohorts ?? [],
          foldedInto: doc.folded_into ?? null,
        });
      }
    }
    return found;
  }

  absorb(seq: number, changes: readonly DocumentChange[], options: AbsorbOptions): Promise<void> {
    return absorb(this.writes, seq, changes, options);
  }

  /**
   * The players with a history who carried trait `key` when last touched.
   * Read once when a key turns on, in queue order: it scans.
   */
  async holdersOf(projectId: string, key: string): Promise<string[]> {
    const docs = await this.rollups
      .find({ project_id: projectId, trait_keys: key, folded_into: null }, { projection: { identity_key: 1 } })
      .toArray();
    return docs.map((doc) => doc.identity_key);
  }

  /** Every player history of every project, one at a time. A scan, once (cohort-rebuild.ts). */
  async forEachHistory(visit: (projectId: string, rollup: PlayerRollup) => void): Promise<void> {
    const histories = this.rollups.find({}, { projection: { project_id: 1, identity_key: 1, days: 1, cohorts: 1 } });
    for await (const doc of histories) {
      if (doc.folded_into) continue;
      visit(doc.project_id, {
        identityKey: doc.identity_key,
        days: doc.days ?? {},
        cohorts: doc.cohorts ?? [],
        foldedInto: null,
      });
    }
  }

  /** Players with no event inside the window (`lastDay` before it) go whole. A periodic sweep: it scans. */
  async deleteIdle(beforeDay: string): Promise<number> {
    return (await this.rollups.deleteMany({ last_day: { $lt: beforeDay } })).deletedCount;
  }
}
